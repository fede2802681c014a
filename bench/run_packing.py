#!/usr/bin/env python3
"""Packing short jobs on the real local Slurm: a campaign of N one-second jobs through slurm-ssh with
``temporal_grouping: yes`` vs the same campaign with one array task per job, side by side in one run.

    nice -n 10 python bench/run_packing.py --jobs 10000 --true 2000
    python bench/run_packing.py --jobs 100 --output /dev/stdout   # a smoke run

Each run: a fresh state whose only cluster is the Slurm of scripts/slurm-local.sh (slurm-ssh as the test
user, ``--accounting none``, default queue depth), gridsub, then ``grid almighty --until-done --period 1``;
the wall time from before gridsub until almighty returned. Packed first, then unpacked, then (with
``--true N``) the same with N jobs that do nothing (``/bin/true``), where the RM's own cost per job is all
there is. Work folders live in a temporary directory under /tmp (mode 0777: the test user writes there),
removed at the end. The Slurm is shared: this script only cancels the jobs it submitted itself.
Results go to this script's section of docs/benchmarks.md (or --output).
"""

from __future__ import annotations

import json
import platform
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from harness import BenchError, Row, Section, log

SCRIPT = "bench/run_packing.py"
TARGET = 10.0  # packed at least 10x faster than one task per job


class PackingBench(harness.Bench):
    script = SCRIPT
    heading = "###"

    def __init__(self, args):
        self.env = harness.slurm_env()
        super().__init__(args, "cigri-bench-packing-", shared=True)  # the test user writes there
        self.r = harness.Runner(harness.find_bin(), self.tmp)

    def grid(self, state: Path, *args: str, timeout: float = 7200) -> str:
        return self.r.grid(state, *args, timeout=timeout).out

    def run_campaign(self, tag: str, jobs: int, command: str, packed: bool) -> dict:
        """One campaign from gridsub to almighty's return, on a fresh state; its wall time and RM jobs."""
        folder = self.tmp / tag
        folder.mkdir(mode=0o777)
        folder.chmod(0o777)
        state = folder / "state" / "state.db"
        config = harness.cluster_options(harness.slurm_ssh(self.env, folder / "remote"))
        self.grid(state, "gridclusters", "add", "slurm", "--adapter", "slurm-ssh", *config)
        jdl = {
            "name": tag,
            "exec_file": command,
            "exec_directory": str(folder),
            "walltime": "01:00:00",
            "nb_jobs": jobs,
            "temporal_grouping": "yes" if packed else "no",
            "clusters": {"slurm": {}},
        }
        path = folder / "jdl.json"
        path.write_text(json.dumps(jdl))
        start = time.monotonic()
        self.grid(state, "gridsub", str(path))
        self.grid(state, "almighty", "--until-done", "--period", "1", "--timeout", "7200")
        wall = time.monotonic() - start
        with sqlite3.connect(state) as conn:
            done = conn.execute("SELECT count(*) FROM jobs WHERE state = 'terminated'").fetchone()[0]
            remotes = [r[0] for r in conn.execute("SELECT remote_id FROM jobs")]
        rm_jobs = len({r.split("+")[0] for r in remotes if r})
        return {"wall": wall, "done": done, "rm_jobs": rm_jobs}

    def packing(self, section: Section) -> None:
        args = self.args
        sleeper = self.tmp / "sleep1.sh"
        sleeper.write_text("#!/bin/sh\nsleep 1\n")
        sleeper.chmod(0o755)
        kinds = [("sleep 1", str(sleeper), args.jobs)] + ([("/bin/true", "/bin/true", args.true)] if args.true else [])
        for label, command, jobs in kinds:
            slug = "true" if command == "/bin/true" else "sleep"
            packed = self.run_campaign(f"packed-{slug}", jobs, command, True)
            plain = self.run_campaign(f"plain-{slug}", jobs, command, False)
            ratio = plain["wall"] / packed["wall"]
            met = "yes" if ratio >= TARGET else f"**NO**: {ratio:.1f}x"
            section.rows.append(
                Row(
                    f"{jobs:,} × `{label}`: packed vs one array task per job",
                    f"{packed['wall']:.1f} s ({packed['rm_jobs']:,} RM jobs)",
                    f"{plain['wall']:.1f} s ({plain['rm_jobs']:,} RM jobs)",
                    f"{ratio:.2f}x faster",
                    f"≥ {TARGET:g}x" if command != "/bin/true" else "(extra)",
                    met if command != "/bin/true" else "-",
                )
            )
            if packed["done"] != jobs or plain["done"] != jobs:
                section.notes.append(f"{label}: {packed['done']} and {plain['done']} of {jobs} jobs terminated.")
        slots = subprocess.run(["sinfo", "-h", "-o", "%C"], capture_output=True, text=True).stdout.split()
        section.notes.append(
            f"Slurm: CPUs allocated/idle/other/total {', '.join(slots)}; a one-second job holds one CPU, so "
            f"{args.jobs:,} of them need at least {args.jobs:,} CPU-seconds whatever the packing."
        )

    def cleanup(self) -> None:
        """Cancel, through cigri itself, what a failed run left on the Slurm (nothing when every campaign
        ended), then remove the folder."""
        for state in self.tmp.glob("*/state/state.db"):
            try:
                for row in json.loads(self.grid(state, "gridstat", "--json")):
                    if row["state"] == "in_treatment":
                        self.grid(state, "griddel", str(row["id"]))
                self.grid(state, "almighty", timeout=120)
            except BenchError as exc:
                print(f"could not clean {state}: {exc}", file=sys.stderr)
        super().cleanup()


def main() -> int:
    parser = harness.arguments(__doc__)
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs per campaign (default 10,000)")
    parser.add_argument("--true", type=int, default=0, metavar="N", help="also compare campaigns of N × /bin/true")
    args = parser.parse_args()
    bench = PackingBench(args)
    intro = (
        f"`{SCRIPT}`: a campaign of one-second jobs (`sleep 1`) through slurm-ssh with `temporal_grouping: yes` "
        "vs the same campaign with one array task per job, side by side in one run, each on a fresh state "
        "(gridsub, then `grid almighty --until-done --period 1`; wall time from before gridsub until almighty "
        "returned). The packed campaign's first batch runs unpacked: its jobs' mean duration is not known "
        "before some have ended."
    )
    bench.measure([("Packing short jobs on a real Slurm", intro, bench.packing)])
    lines, missed = harness.section_lines(bench.sections, bench.heading)
    machine = f"{platform.node()}, {harness.cpu_model()}, Python {platform.python_version()}"
    body = "\n".join(
        [
            "## Packing short jobs (Slurm)",
            "",
            f"- Command: `nice -n 10 python {SCRIPT} --jobs {args.jobs}{f' --true {args.true}' if args.true else ''}`",
            f"- Ran {harness.utc_now()} UTC on {machine}; {harness.code_version()}",
            "",
            *lines,
        ]
    )
    harness.write_section(args.output, SCRIPT, body)
    for miss in missed:
        log(f"target missed: {miss}")
    return 1 if bench.sections[0].error else 0


if __name__ == "__main__":
    sys.exit(main())
