#!/usr/bin/env python3
"""Black holes in the simulator: when cigri blacklists a cluster that ends every job at once, and what it
costs the campaign.

    python bench/run_blackhole.py                  # 4 variants x 5 seeds of bench/scenarios/blackhole.yaml
    python bench/run_blackhole.py --seeds 3        # fewer seeds
    python bench/run_blackhole.py --jobs 2         # simulations side by side
    python bench/run_blackhole.py --save DIR       # keep each simulation's figures as it ends
    python bench/run_blackhole.py --render DIR     # write the section from kept figures, simulating nothing

The scenario's cluster ``sink`` is run four ways on each seed: a black hole from 1800 s on (the scenario as
written), a black hole from the start, healthy, and absent. Every figure comes from the simulated world's
records: when the sink's jobs ended at once (its 10th such end: the streak the default ``blackhole.streak``
needs), the pass that first saw it (the first pass at or after it), the pass at which the BLACK_HOLE event
opened, the jobs it swallowed, the jobs lost (never run to a real end anywhere), and the campaign's
makespan against the same seed with the sink healthy and with it absent. cigri runs with its default
thresholds (10 ends in a row under 5 s, while the jobs take a median of at least 50 s elsewhere). Writes its
section of docs/benchmarks.md.
"""

from __future__ import annotations

import bisect
import statistics
from pathlib import Path

from harness import SCENARIOS, arguments, measured, simulations, stamp, table_header, write_section, yaml_scenario

from cigri.model import EventCode
from cigri.sim.run import Simulation
from cigri.sim.scenario import parse

SCENARIO = SCENARIOS / "blackhole.yaml"
SINK = "sink"
STREAK = 10  # the default blackhole.streak: the "10th instant job"
VARIANTS = ("hole at 1800 s", "hole from the start", "sink healthy", "no sink")
HOLES = VARIANTS[:2]
PASSES_TARGET = 1  # blacklisted within one pass of the 10th instant job
MAKESPAN_TARGET = 1.10  # the campaign's makespan within 10 % of the same scenario without the black hole
COLUMNS = [
    "sink",
    "seed",
    "1st instant end",
    "10th instant end (pass)",
    "blacklisted at (pass)",
    "passes late",
    "swallowed",
    "lost",
    "done twice",
    "makespan",
    "vs healthy",
    "vs absent",
]
TABLE_HEADER = table_header(COLUMNS)


def scenario_data(variant: str, seed: int) -> dict:
    """The scenario's YAML as data, the sink made as ``variant`` says, on ``seed``."""
    data = yaml_scenario(SCENARIO, seed)
    clusters = data["clusters"]
    sink = next(c for c in clusters if c["name"] == SINK)
    if variant == "hole from the start":
        sink["black_hole"] = True
    elif variant == "sink healthy":
        sink.pop("black_hole")
    elif variant == "no sink":
        clusters.remove(sink)
    return data


def detection(simulation: Simulation) -> dict | None:
    """From the simulated world: the sink's instant ends, the pass that first saw the 10th, and the pass at
    which cigri opened the BLACK_HOLE event (None without a black hole)."""
    sink = simulation.clusters.get(SINK)
    if sink is None or not sink.spec.black_hole:
        return None
    ends = sorted(sink.usage.black_hole_times)
    passes = simulation.trace.times
    events = [e for e in simulation.store.events(open_only=False) if e.code == EventCode.BLACK_HOLE]
    tenth = ends[STREAK - 1] if len(ends) >= STREAK else None
    opened = events[0].created_at if events else None
    seen = bisect.bisect_left(passes, tenth) if tenth is not None else None
    at = bisect.bisect_left(passes, opened) if opened is not None else None
    return {
        "swallowed": len(ends),
        "first": ends[0] if ends else None,
        "tenth": tenth,
        "tenth_pass": seen,
        "event_at": opened,
        "event_pass": at,
        "passes_late": at - seen if seen is not None and at is not None else None,
        "events": len(events),
        "message": events[0].message if events else None,
    }


def simulate(variant: str, seed: int, save: Path | None) -> tuple[str, str, dict, float]:
    """One simulation to its end: (variant, "seed N", its figures with ``blackhole``, wall seconds)."""
    simulation = Simulation(parse(scenario_data(variant, seed)))
    return measured(simulation, variant, f"seed {seed}", save, lambda simulation: {"blackhole": detection(simulation)})


def at(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:,.1f} s"


def hole_rows(results: dict, seeds: list[int]) -> list[str]:
    rows = []
    for variant in HOLES:
        for seed in seeds:
            r = results.get((variant, f"seed {seed}"))
            if r is None:
                continue
            d = r["blackhole"]
            healthy = results.get(("sink healthy", f"seed {seed}"))
            absent = results.get(("no sink", f"seed {seed}"))
            vs_healthy = f"{r['makespan'] / healthy['makespan']:.3f}x" if healthy else "-"
            vs_absent = f"{r['makespan'] / absent['makespan']:.3f}x" if absent else "-"
            rows.append(
                f"| {variant} | {seed} | {at(d['first'])} | {at(d['tenth'])} (pass {d['tenth_pass']}) "
                f"| {at(d['event_at'])} (pass {d['event_pass']}) | {d['passes_late']} | {d['swallowed']} "
                f"| {r['lost']} | {r['duplicated']} | {r['makespan']:,.0f} s | {vs_healthy} | {vs_absent} |"
            )
    return rows


def targets(results: dict, seeds: list[int]) -> list[str]:
    lines = []
    for variant in HOLES:
        runs = [results.get((variant, f"seed {s}")) for s in seeds]
        runs = [r for r in runs if r is not None]
        if not runs:
            continue
        late = [r["blackhole"]["passes_late"] for r in runs]
        worst = None if None in late else max(late)
        met = "yes" if worst is not None and worst <= PASSES_TARGET else "**NO**"
        lines.append(
            f"| {variant} | passes from the 10th instant end seen to the blacklist, worst of {len(runs)} seed(s) "
            f"| {'never blacklisted' if worst is None else worst} | <= {PASSES_TARGET} | {met} |"
        )
        for baseline in ("sink healthy", "no sink"):
            ratios = [
                r["makespan"] / results[baseline, f"seed {s}"]["makespan"]
                for s, r in zip(seeds, runs, strict=False)
                if (baseline, f"seed {s}") in results
            ]
            if ratios:
                met = "yes" if max(ratios) <= MAKESPAN_TARGET else "**NO**"
                lines.append(
                    f"| {variant} | makespan vs {baseline}, worst (mean) of {len(ratios)} seed(s) "
                    f"| {max(ratios):.3f}x ({statistics.mean(ratios):.3f}x) | <= {MAKESPAN_TARGET:.2f}x | {met} |"
                )
        lost = sum(r["lost"] for r in runs)
        met = "yes" if not lost else "**NO**"
        lines.append(f"| {variant} | jobs lost (never run to a real end), all seeds | {lost} | 0 | {met} |")
    return lines


def render(results: dict, walls: dict, seeds: list[int], total: float, output: Path) -> None:
    message = next(
        (r["blackhole"]["message"] for (v, _), r in results.items() if v == HOLES[0] and r["blackhole"]), None
    )
    body = f"""
## Black holes (`bench/run_blackhole.py`)

The scenario `bench/scenarios/blackhole.yaml` (clusters alpha 64 slots, beta 32 slots at speed 1.5 with 1 %
of failures, sink 8 slots; one campaign of 3,000 jobs of 120-600 s), its sink run four ways on each of
{len(seeds)} seed(s): a black hole from 1800 s on, a black hole from the start, healthy, and absent
({total:,.0f} s of simulation wall time). cigri runs with its default thresholds (`blackhole.streak` 10,
`blackhole.seconds` 5, `blackhole.ratio` 10). Every time comes from the simulated world's records: when the
sink's jobs ended (every job it starts ends at once), the pass that first saw its 10th such end (the first
pass at or after it), the pass at which the BLACK_HOLE event opened (pass numbers count from the first
pass, 0), the jobs the sink swallowed (all sent back and run again elsewhere), the jobs lost (never run to
a real end anywhere), jobs completed twice, and the campaign's makespan against the same seed with the
sink healthy and absent. Run: {stamp()}.

{TABLE_HEADER}
{chr(10).join(hole_rows(results, seeds))}

Targets (issue 12, item 3):

| sink | measure | measured | target | met? |
|---|---|---|---|---|
{chr(10).join(targets(results, seeds))}

A black hole from the start is not blacklisted at its 10th instant end: nothing has ended, nor run for 50 s
(`ratio` x `seconds`), elsewhere yet, and without such a reference cigri waits rather than blacklist a
campaign whose jobs may all be that short; it blacklists the sink once the jobs running elsewhere have run
that long, and every job the sink swallowed meanwhile runs again. The event's message, seed 1, hole at
1800 s: "{message}".
"""
    write_section(output, "bench/run_blackhole.py", body)


def main() -> None:
    args = arguments(__doc__, seeds=5, jobs=True, keep=True).parse_args()
    seeds = list(range(1, args.seeds + 1))
    tasks = [(variant, seed) for seed in seeds for variant in VARIANTS]
    results, walls, total = simulations(simulate, tasks, jobs=args.jobs, save=args.save, render=args.render)
    render(results, walls, seeds, total, args.output)


if __name__ == "__main__":
    main()
