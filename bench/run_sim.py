#!/usr/bin/env python3
"""The simulator's speed, and the baseline scheduler's figures on the bench scenarios.

    python bench/run_sim.py            # small, trace, 100k and the grid week (about 10 minutes)
    python bench/run_sim.py --quick    # without the grid week
    python bench/run_sim.py --previous # keep the baseline now in docs/benchmarks.md beside the new one

Each scenario runs once in this process (the simulation is deterministic: same seed, same figures);
wall time is measured around it. The figures of the current scheduler (test campaigns first, then
FIFO) are the baseline every later strategy is compared with. Writes its section of docs/benchmarks.md.
With --previous, the baseline table the section held (from an earlier run, with its own metrics) is kept
below the new one, once, so that a change of metric or of scheduler shows side by side.
"""

from __future__ import annotations

import re
import resource
from pathlib import Path

from harness import SCENARIOS, arguments, fixed, measured, read_section, simulations, stamp, write_section

from cigri.cli.output import duration
from cigri.sim.run import Simulation
from cigri.sim.scenario import load

SCRIPT = "bench/run_sim.py"
TARGETS = {"hundred-k": 30.0, "grid-week": 600.0}  # wall seconds at most
BASELINE_HEADER = (
    "| "
    + " | ".join(
        [
            "scenario",
            "jobs done (lost, skipped, twice)",
            "makespan (x available-capacity bound)",
            "short p50 / p90 / p99",
            "long p50 / p90 / p99",
            "utilization (completed / available)",
            "resubmitted",
            "wasted slot-s killed / failed / duplicates",
            "remote queue max / mean",
            "fairness (max-min Jain)",
        ]
    )
    + " |"
)


def previous_baseline(doc: Path) -> str:
    """The baseline table the simulator section now holds, retitled as the earlier run's."""
    section = read_section(doc, SCRIPT)
    if "### Baseline" not in section:
        return ""
    commit = re.search(r"Run: (?:cigri code )?commit (\w+)", section)
    old = section.split("### Baseline", 1)[1].split("\n", 1)[1].split("### Previous run", 1)[0].strip()
    return f"### Previous run (commit {commit.group(1) if commit else '?'}), as it was published\n\n{old}\n"


def growth(simulation: Simulation) -> list[tuple[str, int, float]]:
    """Mean pass time by the number of jobs waiting in cigri at that pass."""
    buckets: dict[int, list[float]] = {}
    for pending, seconds in zip(simulation.trace.pending, simulation.trace.pass_seconds, strict=True):
        decade = 0 if pending < 1000 else len(str(pending)) - 3  # 0: <1k, 1: 1k-10k, 2: 10k-100k ...
        buckets.setdefault(decade, []).append(seconds)
    labels = ["< 1,000", "1,000 - 9,999", "10,000 - 99,999", "100,000 - 999,999", "1,000,000 +"]
    return [(labels[min(d, 4)], len(v), sum(v) / len(v)) for d, v in sorted(buckets.items())]


SEEDS = {"small": (1, 2, 3, 7)}  # one scenario on several seeds: a stall shows as one seed far off the others
DEFAULT = "default seed"


def simulate(name: str, label: str, seed: int | None, save: Path | None) -> tuple[str, str, dict, float]:
    simulation = Simulation(load(SCENARIOS / f"{name}.yaml", seed=seed))
    return measured(simulation, name, label, save, lambda simulation: {"growth": growth(simulation)})


def main() -> None:
    parser = arguments(__doc__, quick="skip the grid week")
    parser.add_argument("--previous", action="store_true", help="keep the baseline now in --output beside the new")
    args = parser.parse_args()
    previous = previous_baseline(args.output) if args.previous else ""
    names = ["small", "trace", "hundred-k"] + ([] if args.quick else ["grid-week"])
    tasks = [(name, DEFAULT, None) for name in names]
    tasks += [(name, f"seed {seed}", seed) for name, values in SEEDS.items() for seed in values]
    results, walls, _ = simulations(simulate, tasks)  # in this process: its peak RSS is the simulations'
    speed, baseline, growth_rows = [], [], []
    for name in names:
        result, wall = results[name, DEFAULT], walls[name, DEFAULT]
        target = TARGETS.get(name)
        met = "-" if target is None else ("yes" if wall <= target else f"**NO** ({wall / target:.1f}x the target)")
        p = result["performance"]
        speed.append(
            f"| {name} | {result['jobs']:,} | {duration(result['simulated_seconds'])} | {wall:.1f} s | "
            f"{p['simulated_per_wall_second']:,.0f} | {result['passes']:,} | "
            f"{1000 * p['mean_pass_seconds']:.1f} ms | {f'≤ {target:g} s' if target else '-'} | {met} |"
        )
        c = result["completion_time"]
        waste = result["waste"]
        baseline.append(
            f"| {name} | {result['jobs_done']:,}/{result['jobs']:,} "
            f"({result['lost']:,}, {result['skipped']:,}, {result['duplicated']:,}) | "
            f"{duration(result['makespan'])} ({fixed(result['makespan_over_bound'], 2)}x) | "
            f"{duration(c['short']['p50'])} / {duration(c['short']['p90'])} / {duration(c['short']['p99'])} | "
            f"{duration(c['long']['p50'])} / {duration(c['long']['p90'])} / {duration(c['long']['p99'])} | "
            f"{fixed(100 * result['utilization'] if result['utilization'] is not None else None, 1)}% | "
            f"{result['resubmitted']:,} | "
            f"{waste['killed']:,.0f} / {waste['failed']:,.0f} / {waste['duplicates']:,.0f} | "
            f"{result['remote_queue']['max']:,} / {result['remote_queue']['mean']:,.0f} | "
            f"{fixed(result['fairness_maxmin_jain'], 3)} |"
        )
        growth_rows += [f"| {name} | {label} | {n:,} | {1000 * mean:.1f} ms |" for label, n, mean in result["growth"]]
    seeds = []
    for name, values in SEEDS.items():
        for seed in values:
            result = results[name, f"seed {seed}"]
            seeds.append(
                f"| {name} | {seed} | {result['jobs_done']:,} ({result['lost']:,} lost) | "
                f"{duration(result['makespan'])} | {fixed(result['makespan_over_bound'], 2)}x | "
                f"{fixed(result['fairness_maxmin_jain'], 3)} |"
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    body = f"""
## Simulator (`bench/run_sim.py`)

The real almighty cycle (store, metascheduler, predictor, runner) on simulated clusters and a simulated clock
(`grid simulate`). Regenerate with `python bench/run_sim.py` (`--quick` skips the grid week). Scenarios are in
`bench/scenarios/` (`grid-week.yaml` is written by `make_grid_week.py`). Run: {stamp()},
peak RSS {rss:,.0f} MB.

### Speed

| scenario | jobs | simulated | wall | simulated s / wall s | passes | mean pass | target | met? |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(speed)}

### How a pass grows with the jobs waiting in cigri

| scenario | jobs waiting | passes | mean pass |
|---|---|---|---|
{chr(10).join(growth_rows)}

### Baseline: the current scheduler (test campaigns first, then FIFO)

Every later strategy is compared with these figures, on the same scenarios and seeds. All of them come from
the simulated clusters' records of what ran, never from cigri's own counts. A job is done when a cluster ran
it to a real end (exit 0, not on a black hole); a test campaign's jobs that never ran are skipped; any other
job that never completed is lost. Completion times are from each campaign's submission (short/long split by
the scenario's cutoff on the mean job duration). The makespan's bound is the larger of the longest job on
the fastest cluster and the work over the capacity the grid really had: the first T where the sum over
clusters of speed x (slots, less outages and local users' cores) integrated from the first submission to T
reaches the work. Utilization is the slot-seconds of completed jobs (each once) over that available
capacity; killed (preempted, outage, walltime), failed and duplicate runs are the waste, apart. Fairness is
Jain's index of each user's usage over its max-min fair share (weighted by shares, capped by its demand:
the cores of its arrived, not yet completed jobs) of the cores the grid used, pass by pass.

{BASELINE_HEADER}
|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(baseline)}

The same scenario on several seeds (a job parked where it cannot start shows as one seed far above the others):

| scenario | seed | jobs done | makespan | vs bound | fairness |
|---|---|---|---|---|---|
{chr(10).join(seeds)}

{previous}"""
    write_section(args.output, SCRIPT, body)


if __name__ == "__main__":
    main()
