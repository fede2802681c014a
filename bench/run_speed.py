#!/usr/bin/env python3
"""The simulator's cost against a reference commit, side by side: CPU seconds of each scenario with the code of
this checkout and with the code of ``--against`` (a commit, exported with git archive into a temporary folder),
the runs interleaved so that the machine's noise hits both alike, and whether the simulated figures are the
same (every metric but the timings).

    python bench/run_speed.py                      # hundred-k, small and trace against d3bec57, 2 repeats
    python bench/run_speed.py --only hundred-k --repeats 3 --against HEAD~5

Each run is a child process (its CPU time is the simulation's, read from inside it). Writes its section of
docs/benchmarks.md (--output).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

from harness import ROOT, SCENARIOS, arguments, fx, git, log, med, side_by_side, stamp, write_section

SCRIPT = "bench/run_speed.py"
SCENARIO_NAMES = ("hundred-k", "small", "trace", "flow", "blackhole", "locality", "locality-contiguous")
DEFAULT = ("hundred-k", "small", "trace")
REFERENCE = "d3bec57"  # the commit issue 20 measured (45.8 CPU s for hundred-k)
TARGETS = {"hundred-k": 8.0}  # CPU seconds at most

CHILD = """
import json, sys, time
from cigri.sim.run import simulate
from cigri.sim.scenario import load
start = time.process_time()
result = simulate(load(sys.argv[1]))
cpu = time.process_time() - start
result.pop("performance")
print(json.dumps({"cpu": cpu, "figures": result}, sort_keys=True, default=str))
"""


def export(commit: str, into: Path) -> Path:
    """The cigri package of ``commit``, unpacked into ``into`` (its parent folder goes first on PYTHONPATH)."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "cigri"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    return into


def run(code: Path, scenario: Path) -> dict:
    """One simulation in a child process importing cigri from ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(scenario)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(code), "PATH": "/usr/bin:/bin"},
        cwd=code,
    )
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = arguments(__doc__, repeats=2, only=SCENARIO_NAMES)
    parser.add_argument("--against", default=REFERENCE, help=f"the reference commit (default {REFERENCE})")
    args = parser.parse_args()
    names = args.only or list(DEFAULT)
    try:
        reference = git(ROOT, "rev-parse", "--short", "--verify", f"{args.against}^{{commit}}")
    except subprocess.CalledProcessError:
        parser.error(f"--against {args.against}: no such commit in this checkout")
    rows, identical = [], []
    with tempfile.TemporaryDirectory(prefix="cigri-speed-") as tmp:
        old = export(reference, Path(tmp))
        for name in names:
            scenario = SCENARIOS / f"{name}.yaml"
            figures: dict[str, dict] = {}

            def measure(code: Path, label: str, scenario: Path = scenario, figures: dict = figures):
                def once(_rep: int) -> float:
                    out = run(code, scenario)
                    figures[label] = out["figures"]
                    return out["cpu"]

                return once

            log(f"{name}: {reference} against this checkout, {args.repeats} repeats")
            taken = side_by_side(args.repeats, {"reference": measure(old, "reference"), "now": measure(ROOT, "now")})
            before, after = med(taken["reference"]), med(taken["now"])
            same = figures["reference"] == figures["now"]
            identical.append(same)
            target = TARGETS.get(name)
            met = "-" if target is None else ("yes" if after <= target else f"**NO** ({after / target:.1f}x)")
            rows.append(
                f"| {name} | {before:.1f} s | {after:.1f} s | {fx(after / before)} | "
                f"{'yes' if same else '**no**'} | {f'≤ {target:g} CPU s' if target else '-'} | {met} |"
            )
    body = f"""
## Simulator speed against a reference commit (`bench/run_speed.py`)

CPU seconds of `grid simulate` on each scenario, with the code at commit {reference} and with this checkout's,
each in a child process, {args.repeats} interleaved runs each (medians). "Same figures": every simulated figure
(jobs done, makespan, completion times, utilization, waste, fairness, queues, estimated ends...) is identical.
Against a commit older than a deliberate change of scheduling they differ (the runs then do different work: a
refactor is checked with `--against` a recent commit); since d3bec57 the placement changed (issue 21) and
each run also computes the offline reference (hundred-k: about 3 CPU s of the figure), which d3bec57 did not.
Run: {stamp()}.

| scenario | CPU at {reference} | CPU now | ratio | same figures | target | met? |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    write_section(args.output, SCRIPT, body)
    log(f"written to {args.output}; figures identical: {all(identical)}")


if __name__ == "__main__":
    main()
