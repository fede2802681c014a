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
ORDER = ("updator", "spritz", "metasched", "runner", "nikita")  # the cycle's stages, as a pass runs them

CHILD = """
import json, os, sys, time
from cigri.sim.run import simulate
from cigri.sim.scenario import load
passes, seen = int(sys.argv[2]), []
parts = {}  # CPU seconds of each stage of the cycle, of the simulated clusters' own time, of the reference

def timed(label, f):
    def timing(*args, **kwargs):
        t = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            parts[label] = parts.get(label, 0.0) + time.process_time() - t
    return timing

try:  # this checkout's code (an older commit may lack a name: its parts are not reported)
    import cigri.cycle as cycle
    from cigri.sim.cluster import SimCluster
    from cigri.sim.run import Simulation
    for stage, f in list(cycle.RUNS.items()):
        cycle.RUNS[stage] = timed(stage, f)
    SimCluster.advance_to = timed("simulated clusters", SimCluster.advance_to)
    Simulation._offline_reference = timed("offline reference", Simulation._offline_reference)
except (ImportError, AttributeError):
    parts = None
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
        jobs = len(sim.ledger.completed)
        out = {"cpu": time.process_time() - start, "figures": world, "cut": True, "parts": parts, "jobs": jobs}
        print(json.dumps(out, sort_keys=True), flush=True)
        os._exit(0)
start = time.process_time()
result = simulate(load(sys.argv[1]), on_pass=stop if passes else None)
cpu = time.process_time() - start
result.pop("performance")
out = {"cpu": cpu, "figures": result, "cut": False, "parts": parts, "jobs": result["jobs_done"]}
print(json.dumps(out, sort_keys=True, default=str))
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


def parts_table(shares: list[tuple[str, float, dict[str, float], int]]) -> str:
    """Where this checkout's CPU went, per scenario job: each stage of the cycle (the simulated clusters'
    answers to it included), the simulated clusters' own time, the offline reference, and the rest."""
    if not shares:
        return ""
    seen = dict.fromkeys(label for _, _, parts, _ in shares for label in parts)
    last = ("simulated clusters", "offline reference")
    columns = [c for c in (*ORDER, *seen) if c in seen and c not in last] + [c for c in last if c in seen]
    columns = list(dict.fromkeys(columns))
    lines = [
        "",
        "Where this checkout's CPU went, in microseconds per scenario job that ended (the run of median CPU):\n"
        "each stage of the cycle (the simulated clusters' answers to it included), the simulated clusters' own\n"
        "time as the clock moves, the offline reference, and the rest (the simulator's loop and figures).",
        "",
        "| scenario | jobs | " + " | ".join(columns) + " | rest | all |",
        "|---|---|" + "---|" * (len(columns) + 2),
    ]
    for label, cpu, parts, jobs in shares:
        each = [parts.get(column, 0.0) for column in columns]
        cells = [f"{1e6 * seconds / max(1, jobs):,.0f}" for seconds in [*each, cpu - sum(each), cpu]]
        lines.append(f"| {label} | {jobs:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


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
    rows, identical, shares = [], [], []
    with tempfile.TemporaryDirectory(prefix="cigri-speed-") as tmp:
        old = export(reference, Path(tmp))
        for name in names:
            scenario = SCENARIOS / f"{name}.yaml"
            figures: dict[str, dict] = {}
            cut: list[bool] = []
            spent: dict[float, tuple[dict[str, float], int]] = {}  # this checkout's runs: CPU -> (parts, jobs)

            def measure(
                code: Path,
                label: str,
                scenario: Path = scenario,
                figures: dict = figures,
                cut: list = cut,
                spent: dict = spent,
            ):
                def once(_rep: int) -> float:
                    out = run(code, scenario, args.passes or 0)
                    figures[label] = out["figures"]
                    cut.append(out["cut"])
                    if label == "now" and out["parts"] is not None:
                        spent[out["cpu"]] = (out["parts"], out["jobs"])
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
            if spent:  # the parts of the run of median CPU (of the one above it, with an even count)
                cpu = sorted(spent)[len(spent) // 2]
                shares.append((label, cpu, *spent[cpu]))
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
each run also computes the offline reference (its share is in the second table), which d3bec57 did not.
A row "to pass N" stopped each simulation after its N-th pass (`--passes`): the CPU seconds to that pass, and
the figures compared are the simulated world's records then (the clock; jobs started, ended, killed and
cancelled on each cluster; scenario jobs completed). Run: {stamp()}.

| scenario | CPU at {reference} | CPU now | ratio | same figures | target | met? |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}
{parts_table(shares)}"""
    write_section(args.output, SCRIPT, body)
    log(f"written to {args.output}; figures identical: {all(identical)}")


if __name__ == "__main__":
    main()
