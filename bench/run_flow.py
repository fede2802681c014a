#!/usr/bin/env python3
"""Every flow strategy on every bench scenario, one table, one run.

    python bench/run_flow.py                        # every scenario but the grid week
    python bench/run_flow.py --only flow --only small
    python bench/run_flow.py --save DIR             # keep each simulation's figures as it ends
    python bench/run_flow.py --render DIR           # write the section from kept figures, simulating nothing

Each (scenario, strategy) pair is one simulation of the real cycle (the default strategy decides, the flow
strategy sizes every cluster's queue) on the scenario's default seed. Local load fluctuates in every scenario:
the scenarios' own random local jobs, and in ``flow.yaml`` steps of local load on both clusters, one of which
does not preempt grid jobs. The sensor is the clusters' grid-waiting jobs (pi's and ip's reference: each
cluster's queue_depth, what the constant strategy lets wait), with pi modelled as an integrator (a = 1, b = 1)
and ip with alpha = 1, the tuning ``tests/test_flow_step.py`` checks. On a scenario with a file server, pi and
ip run again with the file server's load as sensor on every cluster it serves (``load:HOST``), the reference
2.8 (a margin below the overload threshold of 3 the metric counts against), queue 16, pi with a = 1, b = 0.1
(one slot sent adds about 0.1 to the load within a pass), ip with alpha = 0.05, kp = 0.2. Every figure comes
from the simulated clusters' records. Writes its section of docs/benchmarks.md.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness import SCENARIOS, arguments, measured, result_rows, simulations, stamp, table_header, write_section

from cigri.cli.output import duration
from cigri.flow import registry
from cigri.sim.run import Simulation
from cigri.sim.scenario import Scenario, load

NAMES = ["flow", "small", "trace", "hundred-k", "grid-week"]
DEFAULT = ["flow", "small", "trace", "hundred-k"]  # the grid week takes about 20 minutes a strategy here
WAITING_OPTIONS = {"pi": {"a": 1, "b": 1}, "ip": {"alpha": 1}}
LOAD_REFERENCE = 2.8
LOAD_OPTIONS = {"pi": {"a": 1, "b": 0.1, "queue": 16}, "ip": {"alpha": 0.05, "kp": 0.2, "queue": 16}}
MAKESPAN_TARGET, WITHIN_TARGET = 1.10, 0.99
ABOVE_TARGET, USAGE_TARGET = 0.20, 0.90
COLUMNS = [
    "scenario",
    "flow",
    "jobs done",
    "makespan (x bound, x reference)",
    "utilization",
    "queued slots mean / p99 (worst cluster)",
    "passes over allowance",
    "queued jobs cancelled",
    "local wait (core-s)",
    "file server above reference",
    "wall",
]
TABLE_HEADER = table_header(COLUMNS)


def variants(scenario: Scenario) -> list[tuple[str, str, bool]]:
    """(label, flow strategy, reads the file server) for every registered strategy on the waiting-jobs
    sensor, then pi and ip on the file server's load when the scenario has one."""
    out = [(name, name, False) for name in sorted(registry(), key=lambda n: (n != "constant", n))]
    if scenario.file_server is not None:
        out += [(f"{name} (load)", name, True) for name in ("pi", "ip") if name in registry()]
    return out


def configured(scenario: Scenario, name: str, load_sensor: bool) -> Scenario:
    """The scenario with the flow's options (and, for the load variants, every served cluster's sensor and
    reference) in its config."""
    options = LOAD_OPTIONS.get(name, {}) if load_sensor else WAITING_OPTIONS.get(name, {})
    settings = {f"flow.{name}.{key}": value for key, value in options.items()}
    if name in WAITING_OPTIONS and not load_sensor:  # keep the constant strategy's queue waiting
        for cluster in scenario.clusters:
            depth = cluster.queue_depth if cluster.queue_depth is not None else max(16, cluster.slots // 4)
            settings[f"clusters.{cluster.name}.reference"] = depth
    if load_sensor:
        server = scenario.file_server
        for cluster in scenario.clusters:
            if not server.clusters or cluster.name in server.clusters:
                settings[f"clusters.{cluster.name}.sensor"] = f"load:{server.host}"
                settings[f"clusters.{cluster.name}.reference"] = LOAD_REFERENCE
    return replace(scenario, config={**scenario.config, **settings})


def simulate(scenario_name: str, label: str, name: str, load_sensor: bool, save: Path | None = None):
    scenario = configured(load(SCENARIOS / f"{scenario_name}.yaml"), name, load_sensor)
    simulation = Simulation(scenario, flow=name)
    return measured(simulation, scenario_name, label, save)


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def row(scenario: str, label: str, r: dict, wall: float) -> str:
    f = r["flow"]
    clusters = f["clusters"].values()
    mean = max((c["waiting_mean"] for c in clusters), default=0.0)
    p99 = max((c["waiting_p99"] for c in clusters), default=0.0)
    server = f["file_server"]
    above = percent(server["time_above_reference"]) if server else "-"
    lost = f" ({r['lost']:,} lost)" if r["lost"] else ""
    ratio = "-" if r["makespan_over_bound"] is None else f"{r['makespan_over_bound']:.2f}"
    reference = r.get("makespan_over_reference")
    against = "-" if reference is None else f"{reference:.2f}"
    return (
        f"| {scenario} | {label} | {r['jobs_done']:,}/{r['jobs']:,}{lost} | {duration(r['makespan'])} "
        f"({ratio}x, {against}x) | "
        f"{percent(r['utilization'])} | {mean:.1f} / {p99:.0f} | {percent(f['over_allowance'])} | "
        f"{r['cancelled_queued']:,} | {f['local_wait_core_seconds']:,.0f} | {above} | {wall:.0f} s |"
    )


def targets(results: dict[tuple[str, str], dict]) -> list[str]:
    """Per scenario: the best strategy by makespan among those within the allowance in >= 99 % of passes;
    on the file server: each load controller's time above the reference and usage against taps'."""
    lines = []
    for scenario in dict.fromkeys(s for s, _ in results):
        runs = {label: r for (s, label), r in results.items() if s == scenario}
        within = {
            label: r
            for label, r in runs.items()
            if r["makespan_over_bound"] is not None and (r["flow"]["over_allowance"] or 0.0) <= 1 - WITHIN_TARGET
        }
        if within:
            label, best = min(within.items(), key=lambda item: item[1]["makespan_over_bound"])
            ratio = best["makespan_over_bound"]
            met = "yes" if ratio <= MAKESPAN_TARGET else "**NO**"
            lines.append(
                f"| {scenario} | makespan of the best flow within the allowance in >= 99 % of passes "
                f"| {label}: {ratio:.2f}x | <= {MAKESPAN_TARGET:.2f}x | {met} |"
            )
        else:
            lines.append(f"| {scenario} | a flow within the allowance in >= 99 % of passes | none | - | **NO** |")
        taps = runs.get("taps")
        for label, r in runs.items():
            server = r["flow"]["file_server"]
            if not label.endswith("(load)") or server is None or taps is None:
                continue
            above = server["time_above_reference"]
            usage = r["utilization"] / taps["utilization"] if taps["utilization"] else None
            met = "yes" if above <= ABOVE_TARGET and usage is not None and usage >= USAGE_TARGET else "**NO**"
            taps_above = taps["flow"]["file_server"]["time_above_reference"]
            lines.append(
                f"| {scenario} | {label}: time above the file server's reference, usage vs taps "
                f"| {percent(above)} at {percent(usage)} of taps' usage (taps: {percent(taps_above)} above) "
                f"| <= {percent(ABOVE_TARGET)} at >= {percent(USAGE_TARGET)} | {met} |"
            )
    return lines


def main() -> None:
    args = arguments(__doc__, jobs=True, only=NAMES, keep=True).parse_args()
    names = args.only or DEFAULT
    tasks = [(scenario, *variant) for scenario in names for variant in variants(load(SCENARIOS / f"{scenario}.yaml"))]
    results, walls, total = simulations(simulate, tasks, jobs=args.jobs, save=args.save, render=args.render)
    rows = result_rows([(s, label) for s, label, _, _ in tasks], results, walls, row, len(COLUMNS))
    skipped = [n for n in NAMES if n not in names]
    note = f"; not run: {', '.join(skipped)} (`--only NAME` runs it)" if skipped else ""
    deciding = ", ".join(sorted({r["policy"] for r in results.values()}))
    body = f"""
## Flow strategies side by side (`bench/run_flow.py`)

Every registered flow strategy on the bench scenarios, the default strategy ({deciding}) deciding, one
simulation each on the scenario's default seed ({total:,.0f} s of simulation wall time{note}). Run: {stamp()}.
Sensor: each cluster's grid-waiting jobs (pi's and ip's reference: its
queue_depth); pi as an integrator (a = 1, b = 1), ip with alpha = 1; `(load)`: pi and ip on the file
server's 1-minute load, reference {LOAD_REFERENCE} against the overload threshold the metric counts (the
scenario's file_server reference); see the script's docstring. From the simulated world: makespan against
the available-capacity bound and the offline reference; utilization of completed work over the slots the grid
could use; grid slots queued per cluster sampled before each pass (the worst cluster's mean and p99); passes
where a cluster's queue exceeded what its flow allowed at the previous pass; queued jobs the clusters were
asked to cancel (take-backs and nikita's kills); core-seconds local jobs waited while grid jobs held cores;
share of the time the file server's load spent above its reference.

{TABLE_HEADER}
{chr(10).join(rows)}

Targets (issue 11):

| scenario | measure | measured | target | met? |
|---|---|---|---|---|
{chr(10).join(targets(results))}
"""
    write_section(args.output, "bench/run_flow.py", body)


if __name__ == "__main__":
    main()
