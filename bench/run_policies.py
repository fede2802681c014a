#!/usr/bin/env python3
"""Every metascheduler strategy on every bench scenario, one table, one run.

    python bench/run_policies.py                    # every scenario (the grid week takes longest)
    python bench/run_policies.py --quick            # without the grid week
    python bench/run_policies.py --jobs 2           # simulations side by side in 2 processes

Each (scenario, strategy) pair is one simulation of the real cycle on the scenario's default seed. The
strategies' options come from the scenario itself, so that every strategy is judged against the same shares:
fairshare's shares are the scenario's users' shares (run with its default 7-day half-life and with one
hour); classload has one class per user with its share as load
percentage; affinity gives each user one home cluster (the scenario's clusters in turn); srpt's cutoff between
short and long is the scenario's cutoff, run three times: with estimates learned online (the cycle's), with the
scenario's true mean job durations (`--oracle`, what Eagle is handed), and with Eagle's static short
share (`lend: false`; by default srpt lends it to long jobs while no short work is around). Every figure
comes from the simulated clusters' records. Writes its section of docs/benchmarks.md.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from harness import SCENARIOS, arguments, fixed, measured, result_rows, simulations, stamp, table_header, write_section

from cigri.cli.output import duration
from cigri.scheduling import metascheduler, registry
from cigri.sim.run import Simulation
from cigri.sim.scenario import Scenario, load

NAMES = ["small", "flow", "long-first", "trace", "hundred-k", "grid-week"]
COLUMNS = [
    "scenario",
    "strategy",
    "jobs done",
    "short p50 / p90 / p99",
    "long p50 / p90 / p99",
    "makespan (x bound, x reference)",
    "utilization",
    "Jain vs shares",
    "waste killed / failed / duplicates",
    "cancels per job",
    "wall",
]
TABLE_HEADER = table_header(COLUMNS)


def options(name: str, scenario: Scenario) -> dict:
    """The strategy's options for this scenario (see the module docstring)."""
    users = dict(scenario.users)
    if name == "fairshare":
        return {"shares": users}
    if name == "classload":
        total = sum(users.values()) or 1.0
        return {
            "classes": {
                user: {"load_pct": max(1, round(100 * share / total)), "match": f"^{re.escape(user)}$"}
                for user, share in users.items()
            }
        }
    if name == "affinity":
        clusters = [c.name for c in scenario.clusters]
        return {"affinities": {user: [clusters[i % len(clusters)]] for i, user in enumerate(sorted(users))}}
    if name == "srpt":
        return {"cutoff": scenario.short_cutoff}
    return {}


HALF_LIFE = 3600.0  # fairshare's second run: a memory short against the scenarios' length


def variants() -> list[tuple[str, str, bool]]:
    """(label, strategy name, oracle estimates) for every registered strategy; srpt three times (learned and
    oracle estimates, and Eagle's static share), fairshare twice (its default 7-day half-life, and one hour)."""
    out = []
    for name in sorted(registry(), key=lambda n: (n != "fifo", n)):
        out.append((name, name, False))
        if name == "srpt":
            out.append(("srpt (oracle)", name, True))
            out.append(("srpt (no lend)", name, False))
        if name == "fairshare":
            out.append((f"fairshare (half-life {HALF_LIFE:g} s)", name, False))
    return out


def simulate(
    scenario_name: str, label: str, name: str, oracle: bool, save: Path | None = None
) -> tuple[str, str, dict, float]:
    scenario = load(SCENARIOS / f"{scenario_name}.yaml")
    chosen = options(name, scenario)
    if label.startswith("fairshare (half-life"):
        chosen["half_life"] = HALF_LIFE  # the cycle decays usage by the state's configured half-life
        scenario = replace(scenario, config={**scenario.config, "metasched.fairshare.half_life": HALF_LIFE})
    if label == "srpt (no lend)":
        chosen["lend"] = False
    simulation = Simulation(scenario, policy=metascheduler(name, chosen), oracle=oracle)
    return measured(simulation, scenario_name, label, save)


def row(scenario: str, label: str, r: dict, wall: float) -> str:
    c = r["completion_time"]
    waste = r["waste"]
    lost = f" ({r['lost']:,} lost)" if r["lost"] else ""
    lost += f" ({r['skipped']:,} test jobs skipped)" if r["skipped"] else ""
    util = None if r["utilization"] is None else 100 * r["utilization"]
    return (
        f"| {scenario} | {label} | {r['jobs_done']:,}/{r['jobs']:,}{lost} | "
        f"{duration(c['short']['p50'])} / {duration(c['short']['p90'])} / {duration(c['short']['p99'])} | "
        f"{duration(c['long']['p50'])} / {duration(c['long']['p90'])} / {duration(c['long']['p99'])} | "
        f"{duration(r['makespan'])} ({fixed(r['makespan_over_bound'], 2)}x, "
        f"{fixed(r.get('makespan_over_reference'), 2)}x) | {fixed(util, 1)}% | "
        f"{fixed(r['fairness_maxmin_jain'], 3)} | "
        f"{waste['killed']:,.0f} / {waste['failed']:,.0f} / {waste['duplicates']:,.0f} | "
        f"{r['cancelled_queued'] / max(r['jobs'], 1):.3f} | {wall:.0f} s |"
    )


def ratios(results: dict[tuple[str, str], dict]) -> list[str]:
    """srpt and lpt against fifo on each scenario: short p90 speed-up, long p90 slow-down."""
    lines = []
    for scenario in dict.fromkeys(s for s, _ in results):
        fifo = results.get((scenario, "fifo"))
        for label in ("srpt", "srpt (oracle)", "srpt (no lend)", "lpt"):
            srpt = results.get((scenario, label))
            if not fifo or not srpt:
                continue
            f, s = fifo["completion_time"], srpt["completion_time"]
            short = f["short"]["p90"] / s["short"]["p90"] if f["short"]["p90"] and s["short"]["p90"] else None
            long_ = s["long"]["p90"] / f["long"]["p90"] if f["long"]["p90"] and s["long"]["p90"] else None
            times = "-" if short is None else f"{short:.2f}x", "-" if long_ is None else f"{long_:.3f}x"
            lines.append(f"| {scenario} | {label} | {times[0]} | {times[1]} |")
    return lines


def main() -> None:
    args = arguments(__doc__, quick="skip the grid week", jobs=True, only=NAMES, keep=True).parse_args()
    names = args.only or [n for n in NAMES if not (args.quick and n == "grid-week")]
    tasks = [(scenario, *variant) for scenario in names for variant in variants()]
    results, walls, total = simulations(simulate, tasks, jobs=args.jobs, save=args.save, render=args.render)
    rows = result_rows([(s, label) for s, label, _, _ in tasks], results, walls, row, len(COLUMNS))
    spread = f", {args.jobs} processes side by side" if args.jobs > 1 else ""
    missing = sum(1 for s, label, _, _ in tasks if (s, label) not in results)
    if missing:
        spread += (
            f"; the {missing} marked *not run* were not simulated in the session that made this table "
            "(a grid-week run takes about 30 minutes here and 6 GB of memory): "
            "`python bench/run_policies.py --only grid-week --jobs 2` runs them"
        )
    body = f"""
## Strategies side by side (`bench/run_policies.py`)

Every registered metascheduler on every bench scenario, one simulation each, on the scenario's default seed
({total:,.0f} s of simulation wall time{spread}). Run: {stamp()}.
Options from the scenario (see the script's docstring): fairshare and classload follow the users' shares,
affinity gives each user one home cluster, srpt's cutoff is the scenario's; `srpt (oracle)` is handed each
campaign's true mean job duration, `srpt` learns it from completed jobs and lends its short share to long
jobs while no short work is around, `srpt (no lend)` keeps Eagle's static share (`metasched.srpt.lend:
false`). The metrics are those of the simulator section below (from the simulated clusters' records):
completion from each campaign's submission, short/long by the scenario's cutoff on the true mean job
duration; makespan against the available-capacity bound and the offline reference (longest first with true
durations, where each job ends earliest, on the capacity the clusters really had: cigri/sim/reference.py);
utilization of completed work; Jain's index of users' usage against their max-min fair shares; waste in
slot-seconds; cancels per job: queued jobs the clusters saw cancelled (take-backs, flooding, timeouts) over
the jobs.

{TABLE_HEADER}
{chr(10).join(rows)}

srpt and lpt against fifo (short p90: fifo's over theirs, higher is better; long p90: theirs over fifo's, lower is
better); `long-first.yaml` is issue 21's case of long campaigns that arrive first and hold every slot:

| scenario | strategy | short p90 speed-up | long p90 slow-down |
|---|---|---|---|
{chr(10).join(ratios(results))}
"""
    write_section(args.output, "bench/run_policies.py", body)


if __name__ == "__main__":
    main()
