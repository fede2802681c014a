"""scripts/slurm-local.sh: `start` on a Slurm that is up and busy."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import wait_for

ROOT = Path(__file__).parent.parent


def squeue(*args: str) -> str:
    return subprocess.run(["squeue", "-h", *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.slurm
def test_start_succeeds_while_every_core_is_busy(slurm):
    """The health check must not need an idle core: a node full of jobs is a healthy node."""
    occupy = ["sbatch", "--parsable", "-p", slurm["SLURM_PARTITION"], "--exclusive", "-N1", "-J", "busy-node"]
    occupy += ["-o", "/dev/null", "--chdir=/tmp", "--uid", slurm["SLURM_TEST_USER"], "--wrap", "sleep 600"]
    busy = subprocess.run(occupy, capture_output=True, text=True, check=True).stdout.strip()
    try:
        wait_for(lambda: squeue("-j", busy, "-o", "%T").strip() == "RUNNING", timeout=60, interval=0.2)
        start = subprocess.run(
            ["scripts/slurm-local.sh", "start"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SLURM_LOCAL_DEADLINE": "15"},
        )
        assert start.returncode == 0, start.stderr
        assert squeue("-n", "slurm-local-health", "-o", "%i") == ""  # its health check left no job behind
    finally:
        subprocess.run(["scancel", busy], check=True)
