"""The real local Slurm of scripts/slurm-local.sh, for the tests that need it.

With CI=true a test that needs Slurm fails when Slurm is not up; elsewhere it is skipped with the
command that starts it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ENV_FILE = Path("/run/slurm/ci.env")
START = "scripts/slurm-local.sh start"


def slurm_env() -> dict[str, str]:
    problem = None
    if not ENV_FILE.exists():
        problem = f"{ENV_FILE} is missing"
    else:
        env = dict(line.split("=", 1) for line in ENV_FILE.read_text().splitlines() if "=" in line)
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True)
        if "UP" not in ping.stdout:
            problem = f"slurmctld does not answer: {ping.stdout.strip() or ping.stderr.strip()}"
    if problem:
        message = f"Slurm is not running ({problem}): run {START}"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return env


@pytest.fixture
def slurm():
    return slurm_env()


@pytest.fixture
def shared_dir():
    """A folder the cluster's user (cigritest) can read and write: job scripts and job outputs."""
    path = Path(tempfile.mkdtemp(prefix="cigri-slurm-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def ssh_cluster_options(env: dict[str, str]) -> list[str]:
    return [
        "--host",
        env["SSH_HOST"],
        "--port",
        env["SSH_PORT"],
        "--user",
        env["SLURM_TEST_USER"],
        "--identity-file",
        env["SSH_KEY"],
        "--partition",
        env["SLURM_PARTITION"],
        "--besteffort-partition",
        env["SLURM_BESTEFFORT_PARTITION"],
        "--accounting",
        "none",
    ]


JOB = """#!/bin/sh
# $1: job name; $2: what to do. Every run appends "name args" to runs.log beside this script.
here=$(dirname "$0")
name=$1; shift
line=$name
for a in "$@"; do line="$line [$a]"; done
echo "$line" >> "$here/runs.log"  # one short append: concurrent jobs do not interleave
case "$1" in
  fail) echo "failing on purpose: $name" >&2; exit 3 ;;
  sleep) sleep "$2" ;;
  slow-once) if [ ! -e "$here/$name.ran" ]; then touch "$here/$name.ran"; sleep "$2"; fi ;;
esac
echo "ok $name as $(id -un)"
"""


def job_script(folder: Path) -> Path:
    script = folder / "job.sh"
    script.write_text(JOB)
    script.chmod(0o755)
    return script


def runs(folder: Path) -> list[str]:
    log = folder / "runs.log"
    return log.read_text().splitlines() if log.exists() else []
