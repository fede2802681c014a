#!/usr/bin/env python3
"""The simulator's speed, and the baseline scheduler's figures on the bench scenarios.

    python bench/run_sim.py            # small, trace, 100k and the grid week (about 10 minutes)
    python bench/run_sim.py --quick    # without the grid week

Each scenario runs once in this process (the simulation is deterministic: same seed, same figures);
wall time is measured around it. The figures of the current scheduler (test campaigns first, then
FIFO) are the baseline every later strategy is compared with. Writes its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import platform
import resource
import subprocess
import time
from pathlib import Path

from sections import write_section

from cigri.cli.output import duration
from cigri.sim.run import Simulation
from cigri.sim.scenario import load

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "bench" / "scenarios"
DOC = ROOT / "docs" / "benchmarks.md"
TARGETS = {"hundred-k": 30.0, "grid-week": 600.0}  # wall seconds at most
BASELINE_HEADER = (
    "| "
    + " | ".join(
        [
            "scenario",
            "jobs done",
            "makespan",
            "short p50 / p90 / p99",
            "long p50 / p90 / p99",
            "utilization",
            "resubmitted / wasted slot-s",
            "remote queue max / mean",
            "fairness",
        ]
    )
    + " |"
)


def hms(seconds: float | None) -> str:
    return duration(seconds)


def growth(simulation: Simulation) -> list[tuple[str, int, float]]:
    """Mean pass time by the number of jobs waiting in cigri at that pass."""
    buckets: dict[int, list[float]] = {}
    for pending, seconds in zip(simulation.trace.pending, simulation.trace.pass_seconds, strict=True):
        decade = 0 if pending < 1000 else len(str(pending)) - 3  # 0: <1k, 1: 1k-10k, 2: 10k-100k ...
        buckets.setdefault(decade, []).append(seconds)
    labels = ["< 1,000", "1,000 - 9,999", "10,000 - 99,999", "100,000 - 999,999", "1,000,000 +"]
    return [(labels[min(d, 4)], len(v), sum(v) / len(v)) for d, v in sorted(buckets.items())]


def run(name: str) -> tuple[dict, Simulation, float]:
    simulation = Simulation(load(SCENARIOS / f"{name}.yaml"))
    start = time.perf_counter()
    result = simulation.run()
    return result, simulation, time.perf_counter() - start


def main() -> None:
    logging.getLogger("cigri").setLevel(logging.ERROR)  # simulated outages are expected, not news
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the grid week")
    parser.add_argument("--output", type=Path, default=DOC)
    args = parser.parse_args()
    names = ["small", "trace", "hundred-k"] + ([] if args.quick else ["grid-week"])
    speed, baseline, growth_rows = [], [], []
    for name in names:
        print(f"simulating {name} ...", flush=True)
        result, simulation, wall = run(name)
        target = TARGETS.get(name)
        met = "-" if target is None else ("yes" if wall <= target else f"**NO** ({wall / target:.1f}x the target)")
        p = result["performance"]
        speed.append(
            f"| {name} | {result['jobs']:,} | {hms(result['simulated_seconds'])} | {wall:.1f} s | "
            f"{p['simulated_per_wall_second']:,.0f} | {result['passes']:,} | "
            f"{1000 * p['mean_pass_seconds']:.1f} ms | {f'≤ {target:g} s' if target else '-'} | {met} |"
        )
        c = result["completion_time"]
        util = sum(v["utilization"] for v in result["clusters"].values()) / len(result["clusters"])
        baseline.append(
            f"| {name} | {result['jobs_done']:,}/{result['jobs']:,} "
            f"(lost {result['lost']}, twice {result['duplicated']}) | "
            f"{hms(result['makespan'])} ({result['makespan_over_bound']:.2f}x bound) | "
            f"{hms(c['short']['p50'])} / {hms(c['short']['p90'])} / {hms(c['short']['p99'])} | "
            f"{hms(c['long']['p50'])} / {hms(c['long']['p90'])} / {hms(c['long']['p99'])} | {100 * util:.1f}% | "
            f"{result['resubmitted']:,} / {result['wasted_slot_seconds']:,.0f} | "
            f"{result['remote_queue']['max']:,} / {result['remote_queue']['mean']:,.0f} | "
            f"{result['fairness_jain']:.3f} |"
        )
        growth_rows += [f"| {name} | {label} | {n:,} | {1000 * mean:.1f} ms |" for label, n, mean in growth(simulation)]
        simulation.store.close()
        print(f"  {wall:.1f} s", flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    body = f"""
## Simulator (`bench/run_sim.py`)

The real almighty cycle (store, metascheduler, predictor, runner) on simulated clusters and a simulated clock
(`grid simulate`). Regenerate with `python bench/run_sim.py` (`--quick` skips the grid week). Scenarios are in
`bench/scenarios/` (`grid-week.yaml` is written by `make_grid_week.py`). Run: commit {commit.strip()},
{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, peak RSS {rss:,.0f} MB.

### Speed

| scenario | jobs | simulated | wall | simulated s / wall s | passes | mean pass | target | met? |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(speed)}

### How a pass grows with the jobs waiting in cigri

| scenario | jobs waiting | passes | mean pass |
|---|---|---|---|
{chr(10).join(growth_rows)}

### Baseline: the current scheduler (test campaigns first, then FIFO)

Every later strategy is compared with these figures, on the same scenarios and seeds. Completion times are
from each campaign's submission (short/long split by the scenario's cutoff on the mean job duration);
utilization is the mean over clusters of grid slot-seconds over slots x time; fairness is Jain's index of
usage / entitlement.

{BASELINE_HEADER}
|---|---|---|---|---|---|---|---|---|
{chr(10).join(baseline)}
"""
    header = "# Benchmarks\n\nSeveral scripts write this file, each only its own section (between its marker lines).\n"
    write_section(args.output, "bench/run_sim.py", body, header)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
