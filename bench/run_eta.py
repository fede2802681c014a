#!/usr/bin/env python3
"""The estimated end's error in the simulator: at 25, 50 and 75 % of each campaign's jobs done.

    python bench/run_eta.py                       # small, trace, hundred-k and the grid week (~20 min)
    python bench/run_eta.py --quick               # without the grid week
    python bench/run_eta.py --jobs 2              # simulations side by side
    python bench/run_eta.py --save DIR            # also keep each scenario's figures in DIR as it ends
    python bench/run_eta.py --render DIR          # write the section from the figures saved in DIR

For each campaign the simulated clusters completed, the true end is when its last job really ended there;
at the first pass after they had completed 25 (50, 75) % of its jobs, cigri's estimated end of that pass is
judged by |estimate - true end| / (true end - that pass), in % of the time that really remained (see
cigri.sim.run.eta_errors). Writes its section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness import SCENARIOS, arguments, measured, simulations, stamp, write_section

from cigri.sim.run import PROGRESS, Simulation
from cigri.sim.scenario import load

NAMES = ["small", "trace", "hundred-k", "grid-week"]
LABEL = "window"  # the predictor whose estimates are judged
TARGET = 10.0  # % of the remaining time, median, at each mark (the grid week's target)


def simulate(name: str, save: Path | None) -> tuple[str, str, dict, float]:
    return measured(Simulation(load(SCENARIOS / f"{name}.yaml")), name, LABEL, save)


def cell(figures: dict) -> str:
    median, p90 = figures["median_pct"], figures["p90_pct"]
    shown = "-" if median is None else f"{median:.1f} %"
    return f"{shown} (n {figures['n']}, p90 {'-' if p90 is None else f'{p90:.0f} %'})"


def render(results: dict[str, dict], output: Path) -> None:
    rows = []
    for name, result in results.items():
        errors = result["eta_error"]
        met = all(errors[str(p)]["median_pct"] is not None and errors[str(p)]["median_pct"] <= TARGET for p in PROGRESS)
        verdict = ("yes" if met else "**NO**") if name == "grid-week" else "-"
        rows.append(
            f"| {name} | {result['policy']} | " + " | ".join(cell(errors[str(p)]) for p in PROGRESS) + f" | {verdict} |"
        )
    body = f"""
## Estimated end (`bench/run_eta.py`)

Spritz's estimated end (predictor `window`) against the simulated world's own records: for each campaign
that completed, the true end is when its last job really ended on the simulated clusters; at the first pass
after they had completed 25, 50 and 75 % of its jobs, the estimate cigri recorded at that pass is judged by
|estimate - true end| / (true end - that pass). Shown: the median over campaigns, in % of the remaining
time (n campaigns judged; a campaign with no estimate then counts as infinitely wrong). Target: a median
of at most {TARGET:g} % at each mark on the grid week. Run: {stamp(python=False)}.

| scenario | policy | 25 % | 50 % | 75 % | target met? |
|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    write_section(output, "bench/run_eta.py", body)


def main() -> None:
    args = arguments(__doc__, quick="skip the grid week", jobs=True, only=NAMES, keep=True).parse_args()
    names = args.only or NAMES[: 3 if args.quick else 4]
    results, _, _ = simulations(
        simulate, [(name,) for name in names], jobs=args.jobs, save=args.save, render=args.render
    )
    for name in names:
        if (name, LABEL) in results:
            print(f"{name}: {json.dumps(results[name, LABEL]['eta_error'])}", flush=True)
    render({name: results[name, LABEL] for name in NAMES if (name, LABEL) in results}, args.output)


if __name__ == "__main__":
    main()
