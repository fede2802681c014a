#!/usr/bin/env python3
"""Never slower with more clusters: each scenario as it is, with each of its clusters removed, and with a small
slow cluster added (4 slots, speed 0.5, a 30-s submission delay), in the simulator, default strategy.

    python bench/run_monotone.py                 # every bench scenario but the grid week, seeds 1-3
    python bench/run_monotone.py --seeds 12 --jobs 2 --only small

The trace and hundred-k run seed 1 only, as in bench/run_seeds.py (the trace's durations are the trace's; a
trace run takes a minute). The grid week is left out: 22 runs (20 clusters) of about 15 minutes each.

A campaign that names clusters loses the removed one from its list (a variant where it would have none is
skipped). Adding a cluster must never lengthen the makespan by more than 2 % (issue 21): the scenario as it is
against each one-cluster-removed variant (the removed cluster is the one added), and the added slow cluster
against the scenario as it is. Every figure comes from the simulated clusters' records. Writes its section of
docs/benchmarks.md.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from harness import SCENARIOS, arguments, measured, simulations, stamp, write_section

from cigri.sim.cluster import ClusterSpec, NodeGroup
from cigri.sim.run import Simulation
from cigri.sim.scenario import Scenario, load

NAMES = ["small", "flow", "long-first", "trace", "hundred-k"]
ONE_SEED = {"trace", "hundred-k"}  # one seed, as bench/run_seeds.py: the trace's durations are the trace's
SLOW = ClusterSpec("slowpoke", (NodeGroup(count=1, cores=4),), speed=0.5, delay=30.0)
WORSE = 1.02  # adding a cluster may lengthen the makespan by 2 % at most


def variants(scenario: Scenario) -> list[str]:
    names = [c.name for c in scenario.clusters]
    out = ["as is", *(f"without {n}" for n in names if _without(scenario, n) is not None), "with slowpoke"]
    return out


def _without(scenario: Scenario, name: str) -> Scenario | None:
    clusters = [c for c in scenario.clusters if c.name != name]
    campaigns = []
    for plan in scenario.campaigns:
        if plan.clusters:
            kept = tuple(c for c in plan.clusters if c != name)
            if not kept:
                return None
            plan = replace(plan, clusters=kept)
        campaigns.append(plan)
    return replace(scenario, clusters=clusters, campaigns=campaigns) if clusters else None


def variant(scenario: Scenario, label: str) -> Scenario:
    if label == "as is":
        return scenario
    if label == "with slowpoke":
        return replace(scenario, clusters=[*scenario.clusters, SLOW])
    return _without(scenario, label.removeprefix("without "))


def simulate(name: str, label: str, seed: int, save: Path | None) -> tuple[str, str, dict, float]:
    scenario = variant(load(SCENARIOS / f"{name}.yaml", seed=seed), label)
    return measured(Simulation(scenario), f"{name} seed {seed}", label, save, extra=last_job)


def last_job(simulation: Simulation) -> dict:
    """From the simulated world's records: the scenario job that ended last, and how many of its runs failed
    (exited non-zero at the end of their duration) or were killed before it ended."""
    ledger = simulation.ledger
    if not ledger.first_ends:
        return {"last_job": None, "last_job_failed": 0, "last_job_killed": 0}
    work = max(ledger.first_ends, key=lambda w: ledger.first_ends[w][1])
    plan_index, job_index = (int(n) for n in work[1:].split("j"))  # Simulation.work_key: c<plan>j<job>
    durations = simulation.scenario.campaigns[plan_index].durations
    return {
        "last_job": work,
        "last_job_failed": ledger.failed.get(work, 0),
        "last_job_killed": ledger.killed.get(work, 0),
        "last_job_duration": durations[job_index],
        "last_job_longer": sum(d > durations[job_index] for d in durations),  # its campaign's jobs drawn longer
        "last_job_mean": sum(durations) / len(durations),
    }


def rows(results: dict, tasks: list[tuple[str, str, int]]) -> tuple[list[str], list[str]]:
    """The table's rows, and the cases where a cluster more made the makespan more than 2 % longer."""
    out, worse = [], []
    for name, label, seed in tasks:
        key = f"{name} seed {seed}"
        r = results.get((key, label))
        if r is None:
            continue
        base = results.get((key, "as is"))
        if label == "as is" or base is None:
            compare, more = "", None
        elif label == "with slowpoke":  # slowpoke added to the scenario
            more, fewer = r["makespan"], base["makespan"]
            compare = f"{more / fewer:.3f}x (with / as is)"
        else:  # the removed cluster added back
            more, fewer = base["makespan"], r["makespan"]
            compare = f"{more / fewer:.3f}x (as is / {label})"
        if more is not None and more > WORSE * fewer:
            longer = r if label == "with slowpoke" else base  # the run with the cluster more
            lost = [
                f"{n} {what} run{'s' * (n > 1)}"
                for what, n in (
                    ("failed", longer.get("last_job_failed", 0)),
                    ("killed", longer.get("last_job_killed", 0)),
                )
                if n
            ]
            why = f", its last job {longer['last_job']} ran again after {' and '.join(lost)}" if lost else ""
            if not lost and longer.get("last_job_longer") == 0:  # a draw no estimate could foresee
                why = (
                    f", its last job {longer['last_job']} was the longest of its campaign "
                    f"({longer['last_job_duration']:,.0f} s, the campaign's mean {longer['last_job_mean']:,.0f} s)"
                )
            worse.append(f"{key}: {compare}{why}")
        ratio = r["makespan_over_reference"]
        out.append(
            f"| {key} | {label} | {r['makespan']:,.0f} s | {'-' if ratio is None else f'{ratio:.2f}x'} | "
            f"{r['jobs_done']:,}/{r['jobs']:,} | {compare or '-'} |"
        )
    return out, worse


def averages(results: dict, tasks: list[tuple[str, str, int]]) -> list[str]:
    """Per scenario and variant, the mean makespan with the cluster more over the mean without it, across
    the seeds where both ran: the average effect of a cluster more. A seed is one world (durations, each
    cluster's local users, each job run's failure) for both variants: what differs is where the jobs ran."""
    out = []
    for name in dict.fromkeys(n for n, _, _ in tasks):
        for label in dict.fromkeys(lb for n, lb, _ in tasks if n == name and lb != "as is"):
            pairs = []
            for seed in sorted({sd for n, lb, sd in tasks if n == name and lb == label}):
                key = f"{name} seed {seed}"
                r, base = results.get((key, label)), results.get((key, "as is"))
                if r is not None and base is not None:
                    more, fewer = (r, base) if label == "with slowpoke" else (base, r)
                    pairs.append((more["makespan"], fewer["makespan"]))
            if pairs:
                more = sum(p[0] for p in pairs) / len(pairs)
                fewer = sum(p[1] for p in pairs) / len(pairs)
                ratios = [p[0] / p[1] for p in pairs]
                compared = "with / as is" if label == "with slowpoke" else f"as is / {label}"
                out.append(
                    f"| {name} | {compared} | {more / fewer:.3f}x | {min(ratios):.3f}x - {max(ratios):.3f}x | "
                    f"{len(pairs)} |"
                )
    return out


def main() -> None:
    args = arguments(__doc__, seeds=3, jobs=True, only=NAMES, keep=True).parse_args()
    names = args.only or NAMES
    tasks = [
        (name, label, seed)
        for name in names
        for seed in range(1, (1 if name in ONE_SEED else args.seeds) + 1)
        for label in variants(load(SCENARIOS / f"{name}.yaml"))
    ]
    results, _, total = simulations(simulate, tasks, jobs=args.jobs, save=args.save, render=args.render)
    table, worse = rows(results, tasks)
    verdict = (
        "Adding a cluster never lengthened a campaign set by more than 2 %."
        if not worse
        else f"Adding a cluster lengthened the makespan by more than 2 % in {len(worse)} of the comparisons: "
        + "; ".join(worse)
        + "."
    )
    body = f"""
## Never slower with more clusters (`bench/run_monotone.py`)

Each scenario as it is, with each of its clusters removed, and with a small slow cluster added (`slowpoke`: 4
slots, speed 0.5, 30-s delay), default strategy, seeds 1-{args.seeds} (the trace and hundred-k: seed 1; the
grid week is left out: 22 runs of about 15 minutes), {total:,.0f} s of simulation wall time.
A seed draws one world for every variant of it: the campaigns' durations, each cluster's local users (from
the seed and its name) and each job run's failure (its own draw, whichever jobs end before it).
Run: {stamp()}. The last column compares the makespan with one cluster more against the same without it.

| scenario | variant | makespan | x reference | jobs done | one cluster more vs without |
|---|---|---|---|---|---|
{chr(10).join(table)}

{verdict}
Where the run with a cluster more ended on a job whose earlier runs failed or were killed, the verdict says so:
a failed run exits at the end of its duration (2 % of beta's runs on small.yaml), and the job runs again from
its start. Which jobs draw a failure depends on where they ran: such a late failure is luck, not placement.
Where it ended on the longest job of its campaign, the verdict says so too: cigri places a job by its
campaign's mean duration, and a job drawn far longer, queued on or sent to a slow cluster, ends far later than
that mean foretold (placement's risk, not only luck: a shorter queue there would have bounded it).

Over the seeds (mean makespan with one cluster more over the mean without it; the range of the runs' own
ratios beside it):

| scenario | comparison | mean makespan ratio | runs' ratios | seeds |
|---|---|---|---|---|
{chr(10).join(averages(results, tasks))}
"""
    write_section(args.output, "bench/run_monotone.py", body)


if __name__ == "__main__":
    main()
