#!/usr/bin/env python3
"""The simulator's cost against a reference commit, side by side: CPU seconds of each scenario with the code of
this checkout and with the code of ``--against`` (a commit, exported with git archive into a temporary folder),
the runs interleaved so that the machine's noise hits both alike, and whether the simulated figures are the
same (every metric but the timings).

    python bench/run_speed.py                      # hundred-k, small and trace against d3bec57, 2 repeats
    python bench/run_speed.py --only hundred-k --repeats 3 --against HEAD~5
    python bench/run_speed.py --only grid-week --passes 3000 --repeats 1 --against HEAD~1

``--passes N`` stops each simulation after its N-th pass (the grid week's 8,000 passes take about 25 minutes
each): the CPU seconds to that pass, and the simulated world's records then (the clock; jobs started, ended,
killed and cancelled on each cluster; scenario jobs completed) as the figures to compare.

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

from harness import ROOT, SCENARIOS, arguments, fx, git, log, med, positive, side_by_side, stamp, write_section

SCRIPT = "bench/run_speed.py"
SCENARIO_NAMES = ("hundred-k", "small", "trace", "flow", "blackhole", "locality", "locality-contiguous", "grid-week")
DEFAULT = ("hundred-k", "small", "trace")
REFERENCE = "d3bec57"  # the commit issue 20 measured (45.8 CPU s for hundred-k)
TARGETS = {"hundred-k": 8.0}  # CPU seconds at most

CHILD = """
import json, os, sys, time
from cigri.sim.run import simulate
from cigri.sim.scenario import load
passes, seen = int(sys.argv[2]), []
def stop(sim):
    seen.append(sim.clock.now())
    if len(seen) == passes:  # the world's own records at that pass, then out at once
        world = {
            "now": sim.clock.now(),
            "completed": len(sim.ledger.completed),
            "clusters": {
                name: [c.usage.started, c.usage.ended, c.usage.killed, c.usage.cancelled_queued]
                for name, c in sim.clusters.items()
            },
        }
        out = {"cpu": time.process_time() - start, "figures": world, "cut": True}
        print(json.dumps(out, sort_keys=True), flush=True)
        os._exit(0)
start = time.process_time()
result = simulate(load(sys.argv[1]), on_pass=stop if passes else None)
cpu = time.process_time() - start
result.pop("performance")
print(json.dumps({"cpu": cpu, "figures": result, "cut": False}, sort_keys=True, default=str))
"""


def export(commit: str, into: Path) -> Path:
    """The cigri package of ``commit``, unpacked into ``into`` (its parent folder goes first on PYTHONPATH)."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "cigri"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    return into


def run(code: Path, scenario: Path, passes: int = 0) -> dict:
    """One simulation in a child process importing cigri from ``code`` (stopped after ``passes``, when given)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(scenario), str(passes)],
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
    parser.add_argument("--passes", type=positive, help="stop each simulation after this many passes")
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
            cut: list[bool] = []

            def measure(code: Path, label: str, scenario: Path = scenario, figures: dict = figures, cut: list = cut):
                def once(_rep: int) -> float:
                    out = run(code, scenario, args.passes or 0)
                    figures[label] = out["figures"]
                    cut.append(out["cut"])
                    return out["cpu"]

                return once

            log(f"{name}: {reference} against this checkout, {args.repeats} repeats")
            taken = side_by_side(args.repeats, {"reference": measure(old, "reference"), "now": measure(ROOT, "now")})
            before, after = med(taken["reference"]), med(taken["now"])
            same = figures["reference"] == figures["now"]
            identical.append(same)
            target = TARGETS.get(name)
            if any(cut):
                target = None  # a target is for a whole run
            met = "-" if target is None else ("yes" if after <= target else f"**NO** ({after / target:.1f}x)")
            label = f"{name} (to pass {args.passes:,})" if any(cut) else name
            rows.append(
                f"| {label} | {before:.1f} s | {after:.1f} s | {fx(after / before)} | "
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
A row "to pass N" stopped each simulation after its N-th pass (`--passes`): the CPU seconds to that pass, and
the figures compared are the simulated world's records then (the clock; jobs started, ended, killed and
cancelled on each cluster; scenario jobs completed). Run: {stamp()}.

| scenario | CPU at {reference} | CPU now | ratio | same figures | target | met? |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}
"""
    write_section(args.output, SCRIPT, body)
    log(f"written to {args.output}; figures identical: {all(identical)}")


if __name__ == "__main__":
    main()
