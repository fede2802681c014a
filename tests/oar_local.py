"""The real local OAR 2.5.9 of scripts/oar-local.sh, for the tests that need it.

With CI=true a test that needs OAR fails when OAR is not up; elsewhere it is skipped with the command that
starts it. OAR runs the jobs as its test user (``OAR_USER``, not the Slurm tests' cigritest): at each job's end
it deletes every file that user owns under /tmp, so the tests' folders are in its home, removed afterwards."""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from .needs import unavailable

ENV_FILE = Path("/run/oar-local/ci.env")
START = "scripts/oar-local.sh start"


def oar_env() -> dict[str, str]:
    problem = None
    if not ENV_FILE.exists():
        problem = f"{ENV_FILE} is missing"
    else:
        env = dict(line.split("=", 1) for line in ENV_FILE.read_text().splitlines() if "=" in line)
        if not api_answers(env):
            problem = f"OAR's API does not answer on {env.get('OAR_API_URL')}"
        elif (stat := oarstat(env, "-J")).returncode:
            problem = f"oarstat fails: {stat.stderr.strip()[:200]}"
    if problem:
        message = f"OAR is not running ({problem}): run {START}"
        unavailable(message)
    return env


def api_answers(env: dict[str, str]) -> bool:
    try:
        answer = httpx.get(f"{env['OAR_API_URL']}/whoami.json", headers={"X_REMOTE_IDENT": env["OAR_USER"]}, timeout=10)
        return answer.status_code == 200 and answer.json().get("authenticated_user") == env["OAR_USER"]
    except (KeyError, ValueError, httpx.HTTPError):
        return False


def as_user(env: dict[str, str], *argv: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    """An OAR command run here as the test user (OAR's own records, not an adapter's)."""
    return subprocess.run(
        ["runuser", "-u", env["OAR_USER"], "--", *argv],
        capture_output=True,
        text=True,
        cwd=cwd or env["OAR_HOME"],
        timeout=60,
    )


def oarstat(env: dict[str, str], *options: str) -> subprocess.CompletedProcess:
    return as_user(env, "oarstat", *options)


def records(env: dict[str, str], *job_ids: str) -> dict[str, dict]:
    """``oarstat -f -J``'s records of the jobs, by id (OAR's own word on what ran)."""
    options = [word for job_id in job_ids for word in ("-j", str(job_id))]
    out = oarstat(env, "-f", "-J", *options)
    return json.loads(out.stdout) if out.stdout.strip() else {}


def user_jobs(env: dict[str, str], name_prefix: str) -> dict[str, dict]:
    """Every job of the test user (any state) whose name starts with ``name_prefix``, by id: from OAR's
    database through oarstat (``--sql`` on the jobs table)."""
    out = oarstat(env, "-f", "-J", "--sql", f"job_user = '{env['OAR_USER']}' and job_name like '{name_prefix}%'")
    return json.loads(out.stdout) if out.stdout.strip() else {}


@pytest.fixture
def real_oar():
    """OAR's environment, for one test at a time: the tests share its 4 cores (one kills every best-effort job,
    one fills the node). Under pytest-xdist they are one group run by one worker (see tests/conftest.py);
    this lock, on this file, keeps them apart even where that grouping fails."""
    env = oar_env()
    with open(__file__) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield env
        clear_jobs(env)


def current_jobs(env: dict[str, str]) -> list[str]:
    """The ids of the test user's jobs not over yet (oarstat lists only those by default)."""
    out = oarstat(env, "-J", "-u", env["OAR_USER"])
    return list(json.loads(out.stdout)) if out.stdout.strip() else []


def clear_jobs(env: dict[str, str]) -> None:
    """The test user's jobs deleted (what a test left running holds cores), and gone before the next test."""
    if jobs := current_jobs(env):
        as_user(env, "oardel", *jobs)
    deadline = time.monotonic() + 90
    while current_jobs(env):
        if time.monotonic() > deadline:
            raise AssertionError(f"OAR still lists jobs of {env['OAR_USER']} 90 s after oardel: {current_jobs(env)}")
        time.sleep(0.5)


@pytest.fixture
def oar_dir(real_oar):
    """A folder of the test user's, in its home: job scripts and outputs (OAR empties the user's /tmp files).
    Afterwards, what the test added to the home goes (OAR's outputs, cigri's ~/.cigri): the run must leave the
    home as it found it (tests/conftest.py checks)."""
    user = pwd.getpwnam(real_oar["OAR_USER"])
    home = Path(real_oar["OAR_HOME"])
    before = set(home.rglob("*"))
    path = home / f"cigri-test-{uuid.uuid4().hex[:8]}"
    path.mkdir(mode=0o755)
    os.chown(path, user.pw_uid, user.pw_gid)
    yield path
    for added in sorted(set(home.rglob("*")) - before, reverse=True):  # a folder after what it holds
        if added.is_dir() and not added.is_symlink():
            shutil.rmtree(added, ignore_errors=True)
        else:
            added.unlink(missing_ok=True)


def ssh_options(env: dict[str, str], remote_dir: Path) -> list[str]:
    """gridclusters options of an oar-ssh cluster as the test user, its staging in ``remote_dir``."""
    return [
        *("--host", env["OAR_SSH_HOST"], "--port", env["OAR_SSH_PORT"], "--user", env["OAR_USER"]),
        *("--identity-file", env["OAR_SSH_KEY"], "--remote-dir", str(remote_dir)),
    ]


def rest_options(env: dict[str, str]) -> list[str]:
    """gridclusters options of an oar-rest cluster as the test user (auth ident, OAR 2.5's API)."""
    return ["--url", env["OAR_API_URL"], "--login", env["OAR_USER"]]


def ssh_config(env: dict[str, str], remote_dir: Path, **extra) -> dict:
    return {
        "host": env["OAR_SSH_HOST"],
        "port": int(env["OAR_SSH_PORT"]),
        "user": env["OAR_USER"],
        "identity_file": env["OAR_SSH_KEY"],
        "remote_dir": str(remote_dir),
        **extra,
    }


def rest_config(env: dict[str, str], **extra) -> dict:
    return {"url": env["OAR_API_URL"], "login": env["OAR_USER"], **extra}


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:6]}"
