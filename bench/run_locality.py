#!/usr/bin/env python3
"""Data locality in the simulator: the bytes each job picker stages, against the lower bound, and what it
does to the makespan.

    python bench/run_locality.py                  # 3 pickers x 2 scenarios x 3 seeds
    python bench/run_locality.py --seeds 5        # more seeds
    python bench/run_locality.py --jobs 2         # simulations side by side
    python bench/run_locality.py --save DIR       # keep each simulation's figures in DIR as it ends
    python bench/run_locality.py --render DIR     # write the section from kept figures, simulating nothing

The scenarios `bench/scenarios/locality.yaml` (each file shared by consecutive jobs: BOINC's case) and
`bench/scenarios/locality-contiguous.yaml` (each job reads a contiguous range of a file sequence: the
redesign's case) run with the grid config ``locality`` set to ``in-order``, ``locality`` and ``cursors`` (the
metascheduler is fifo throughout: the pickers only choose which jobs). Every figure comes from the simulated
world's records: the bytes each simulated cluster staged into its cache (a file it does not hold when a job
needing it starts), and the makespan. The lower bound is every file some job reads staged once on the whole
grid: the sum of the sizes of the distinct files of the campaign's jobs (the per-team bound of the issue with
a single team; any split into teams can only raise it, so the ratio is the conservative one). Writes its
section of docs/benchmarks.md.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from harness import SCENARIOS, arguments, measured, simulations, stamp, write_section, yaml_scenario

from cigri.sim.run import Simulation
from cigri.sim.scenario import parse

LAYOUTS = {"shared": SCENARIOS / "locality.yaml", "contiguous": SCENARIOS / "locality-contiguous.yaml"}
PICKERS = ("in-order", "locality", "cursors")
BYTES_TARGET = 1.2  # staged bytes at most 1.2 x the lower bound (issue 13)
MAKESPAN_TARGET = 1.05  # makespan within 5 % of in-order's


def scenario_data(layout: str, picker: str, seed: int) -> dict:
    data = yaml_scenario(LAYOUTS[layout], seed)
    data.setdefault("config", {})["locality"] = picker
    return data


def needed_bytes(simulation: Simulation) -> int:
    """The lower bound: the distinct files the campaigns' jobs read, each once, from the simulated world's
    own description of every job (its inputs), sizes from the scenario."""
    needed: set[str] = set()
    for job_files in simulation.job_inputs().values():
        needed.update(job_files)
    return sum(simulation.file_sizes[key] for key in needed)


def simulate(layout: str, picker: str, seed: int, save: Path | None) -> tuple[str, str, dict, float]:
    simulation = Simulation(parse(scenario_data(layout, picker, seed)))
    return measured(simulation, f"{layout} {picker}", f"seed {seed}", save, lambda s: {"needed_bytes": needed_bytes(s)})


def gb(n: float) -> str:
    return f"{n / 1e9:,.0f} GB"


def rows(results: dict, seeds: list[int]) -> list[str]:
    out = []
    for layout in LAYOUTS:
        for picker in PICKERS:
            for seed in seeds:
                r = results.get((f"{layout} {picker}", f"seed {seed}"))
                base = results.get((f"{layout} in-order", f"seed {seed}"))
                if r is None:
                    continue
                per_cluster = ", ".join(f"{name} {gb(c['bytes_staged'])}" for name, c in r["clusters"].items())
                ratio = r["bytes_staged"] / r["needed_bytes"] if r["needed_bytes"] else float("nan")
                vs = f"{r['makespan'] / base['makespan']:.3f}x" if base else "-"
                out.append(
                    f"| {layout} | {picker} | {seed} | {gb(r['bytes_staged'])} ({per_cluster}) "
                    f"| {gb(r['needed_bytes'])} | {ratio:.2f}x | {r['makespan']:,.0f} s | {vs} |"
                )
    return out


def targets(results: dict, seeds: list[int]) -> list[str]:
    out = []
    for layout in LAYOUTS:
        for picker in PICKERS[1:]:
            runs = [(s, results.get((f"{layout} {picker}", f"seed {s}"))) for s in seeds]
            runs = [(s, r) for s, r in runs if r is not None]
            if not runs:
                continue
            ratios = [r["bytes_staged"] / r["needed_bytes"] for _, r in runs]
            met = "yes" if max(ratios) <= BYTES_TARGET else "**NO**"
            out.append(
                f"| {layout} | {picker} | bytes staged / lower bound, worst (mean) of {len(runs)} seeds "
                f"| {max(ratios):.2f}x ({statistics.mean(ratios):.2f}x) | <= {BYTES_TARGET}x | {met} |"
            )
            spans = [
                r["makespan"] / results[f"{layout} in-order", f"seed {s}"]["makespan"]
                for s, r in runs
                if (f"{layout} in-order", f"seed {s}") in results
            ]
            if spans:
                met = "yes" if max(spans) <= MAKESPAN_TARGET else "**NO**"
                out.append(
                    f"| {layout} | {picker} | makespan / in-order's, worst (mean) of {len(spans)} seeds "
                    f"| {max(spans):.3f}x ({statistics.mean(spans):.3f}x) | <= {MAKESPAN_TARGET}x | {met} |"
                )
    return out


def render(results: dict, seeds: list[int], total: float, output: Path) -> None:
    body = f"""
## Data locality (`bench/run_locality.py`)

Two file-heavy scenarios, four clusters (alpha 64 slots at 200 MB/s of staging, beta 32 slots at speed 1.5
and 100 MB/s, gamma 32 slots at 100 MB/s, delta 16 slots at 50 MB/s), one campaign each, jobs of 300-900 s:
`bench/scenarios/locality.yaml` (4,000 jobs, each reading one of 200 files of 2 GB, 20 consecutive jobs per
file) and `bench/scenarios/locality-contiguous.yaml` (3,000 jobs, job i reading files i..i+3 of a sequence of
200 MB files). Each runs with the job picker (`grid config set locality ...`) `in-order` (the lowest ids
first, as before pickers), `locality` (BOINC's locality scheduling, generalised to jobs reading several
files) and `cursors` (its teams-and-cursors redesign), on {len(seeds)} seeds ({total:,.0f} s of simulation
wall time). Bytes staged are the simulated clusters' own count (a file a starting job needs and the cluster's
cache does not hold); staging takes size / bandwidth on the job's run. The lower bound is every file some
job reads staged once on the whole grid (the issue's "once per team" with one team: splitting into teams can
only raise it). Run: {stamp()}.

| layout | picker | seed | bytes staged (per cluster) | lower bound | ratio | makespan | vs in-order |
|---|---|---|---|---|---|---|---|
{chr(10).join(rows(results, seeds))}

Targets (issue 13, item 6):

| layout | picker | measure | measured | target | met? |
|---|---|---|---|---|---|
{chr(10).join(targets(results, seeds))}

`locality` generalises BOINC's rule to jobs reading several files: a cluster takes the jobs needing the
fewest bytes it lacks (with contiguous ranges it goes on along the sequence, one new file per job), and a
cluster with nothing to go on starts afresh in the longest run of files no cluster holds, at its middle when
another cluster's jobs lead into it, so clusters do not interleave along the sequence as in-order does (BOINC's
own rule, a job counting only when all its files are held, staged about 2.5x the bound on the contiguous
layout). `cursors` reaches the same on both layouts by keeping ranges disjoint (a cluster that runs out takes
the upper part of the range with the most time left); it stays the default picker (`grid config set locality
in-order|locality|cursors` chooses another).
"""
    write_section(output, "bench/run_locality.py", body)


def main() -> None:
    args = arguments(__doc__, seeds=3, jobs=True, only=sorted(LAYOUTS), keep=True).parse_args()
    seeds = list(range(1, args.seeds + 1))
    layouts = args.only or list(LAYOUTS)
    tasks = [(layout, picker, seed) for seed in seeds for layout in layouts for picker in PICKERS]
    results, _walls, total = simulations(simulate, tasks, jobs=args.jobs, save=args.save, render=args.render)
    render(results, seeds, total, args.output)


if __name__ == "__main__":
    main()
