"""The real local Slurm of scripts/slurm-local.sh, for the tests that need it.

With CI=true a test that needs Slurm fails when Slurm is not up; elsewhere it is skipped with the
command that starts it."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from .needs import unavailable

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
        elif not rest_answers(env):
            problem = "slurmrestd does not answer the test user's token"
    if problem:
        message = f"Slurm is not running ({problem}): run {START}"
        unavailable(message)
    return env


def rest_answers(env: dict[str, str]) -> bool:
    headers = {"X-SLURM-USER-NAME": env.get("SLURM_TEST_USER", ""), "X-SLURM-USER-TOKEN": env.get("SLURM_JWT_USER", "")}
    try:
        url = f"{env['SLURMRESTD_URL']}/slurm/{env['SLURMRESTD_API']}/ping"
        return httpx.get(url, headers=headers, timeout=5).status_code == 200
    except (KeyError, httpx.HTTPError):
        return False


@pytest.fixture
def slurm():
    """Slurm's environment, for one test at a time: the tests share its one node (one stops its controller,
    one preempts every best-effort job). Under pytest-xdist they are one group run by one worker (see
    tests/conftest.py); this lock, on this file, keeps them apart even where that grouping fails."""
    env = slurm_env()
    with open(__file__) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, after the test
        yield env


@pytest.fixture
def shared_dir():
    """A folder the cluster's user (cigritest) can read and write: job scripts and job outputs."""
    path = Path(tempfile.mkdtemp(prefix="cigri-slurm-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def rest_cluster_options(env: dict[str, str], token_file: Path) -> list[str]:
    """slurm-rest as cigritest; ssh too, for $HOME and the jobs' stderr tails."""
    token_file.write_text(f"SLURM_JWT={env['SLURM_JWT_USER']}\n")
    token_file.chmod(0o600)
    return [
        "--url",
        env["SLURMRESTD_URL"],
        "--user",
        env["SLURM_TEST_USER"],
        "--token-file",
        str(token_file),
        "--partition",
        env["SLURM_PARTITION"],
        "--host",
        env["SSH_HOST"],
        "--port",
        env["SSH_PORT"],
        "--identity-file",
        env["SSH_KEY"],
    ]


def ssh_config(env: dict[str, str], remote_dir: Path, **extra) -> dict:
    """A slurm-ssh cluster's configuration as cigritest, without accounting, staging in ``remote_dir``."""
    return {
        "host": env["SSH_HOST"],
        "port": int(env["SSH_PORT"]),
        "user": env["SLURM_TEST_USER"],
        "identity_file": env["SSH_KEY"],
        "partition": env["SLURM_PARTITION"],
        "accounting": "none",
        "remote_dir": str(remote_dir),
        **extra,
    }


def ssh_cluster_options(env: dict[str, str], remote_dir: Path) -> list[str]:
    """slurm-ssh as cigritest; its staged scripts and outputs in ``remote_dir`` (a shared_dir), not in its home."""
    return [
        "--remote-dir",
        str(remote_dir),
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
