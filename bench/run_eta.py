#!/usr/bin/env python3
"""The estimated end's error in the simulator: at 25, 50 and 75 % of each campaign's jobs done.

    python bench/run_eta.py                       # small, trace, hundred-k and the grid week (~20 min)
    python bench/run_eta.py --quick               # without the grid week
    python bench/run_eta.py --save DIR            # also keep each scenario's figures in DIR/NAME.json as it ends
    python bench/run_eta.py --render DIR          # write the section from the figures saved in DIR

For each campaign the simulated clusters completed, the true end is when its last job really ended there;
at the first pass after they had completed 25 (50, 75) % of its jobs, cigri's estimated end of that pass is
judged by |estimate - true end| / (true end - that pass), in % of the time that really remained (see
cigri.sim.run.eta_errors). Writes its section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import logging
from pathlib import Path

from sections import HEADER, code_version, write_section

from cigri.sim.run import PROGRESS, simulate
from cigri.sim.scenario import load

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "bench" / "scenarios"
DOC = ROOT / "docs" / "benchmarks.md"
TARGET = 10.0  # % of the remaining time, median, at each mark (the grid week's target)


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
of at most {TARGET:g} % at each mark on the grid week. Run: cigri code {code_version(ROOT)},
{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC.

| scenario | policy | 25 % | 50 % | 75 % | target met? |
|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    write_section(output, "bench/run_eta.py", body, HEADER)


def main() -> None:
    logging.getLogger("cigri").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the grid week")
    parser.add_argument("--only", action="append", help="run only this scenario (repeatable)")
    parser.add_argument("--save", type=Path, help="keep each scenario's figures in this folder as it ends")
    parser.add_argument("--render", type=Path, help="write the section from the figures saved in this folder")
    parser.add_argument("--output", type=Path, default=DOC)
    args = parser.parse_args()
    if args.render:
        names = ["small", "trace", "hundred-k", "grid-week"]
        saved = {
            n: json.loads((args.render / f"{n}.json").read_text())
            for n in names
            if (args.render / f"{n}.json").exists()
        }
        render(saved, args.output)
        print(f"wrote {args.output}")
        return
    names = args.only or ["small", "trace", "hundred-k"] + ([] if args.quick else ["grid-week"])
    results = {}
    for name in names:
        print(f"simulating {name} ...", flush=True)
        result = simulate(load(SCENARIOS / f"{name}.yaml"))
        result.pop("campaigns")
        results[name] = result
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{name}.json").write_text(json.dumps(result, indent=1))
        print(f"  {json.dumps(result['eta_error'])}", flush=True)
    render(results, args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
