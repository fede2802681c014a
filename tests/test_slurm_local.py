"""scripts/slurm-local.sh: `start` on a Slurm that is up and busy, started from a folder since deleted, or broken."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import httpx
import pytest

from .conftest import wait_for
from .slurm import ENV_FILE

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "scripts" / "slurm-local.sh"
RUN = Path("/run/slurm")
DAEMONS = ("munged", "slurmctld", "slurmd", "slurmrestd", "sshd")
# slurmctld and slurmd chdir by themselves into their log folder; the others stay where they were started
OWN_FOLDERS = {"munged": {"/"}, "slurmrestd": {"/"}, "sshd": {"/"}, "slurmctld": {"/var/log/slurm"}}
OWN_FOLDERS["slurmd"] = OWN_FOLDERS["slurmctld"]


def squeue(*args: str) -> str:
    return subprocess.run(["squeue", "-h", *args], capture_output=True, text=True, check=True).stdout


def script(command: str, cwd: Path | str = ROOT, deadline: int = 15) -> subprocess.CompletedProcess:
    """The script by its absolute path, from ``cwd``, with the bare environment CI gives it."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SLURM_LOCAL_DEADLINE": str(deadline)}
    return subprocess.run([str(SCRIPT), command], cwd=cwd, capture_output=True, text=True, env=env)


def owned_pid(daemon: str) -> int:
    return int((RUN / f"owned.{daemon}").read_text().split()[0])


def ci_env() -> dict[str, str]:
    return dict(line.split("=", 1) for line in ENV_FILE.read_text().splitlines() if "=" in line)


def rest(env: dict[str, str], method: str, path: str, **kwargs) -> httpx.Response:
    """A request to slurmrestd as the test user, with its token."""
    headers = {"X-SLURM-USER-NAME": env["SLURM_TEST_USER"], "X-SLURM-USER-TOKEN": env["SLURM_JWT_USER"]}
    url = f"{env['SLURMRESTD_URL']}/slurm/{env['SLURMRESTD_API']}/{path}"
    return httpx.request(method, url, headers=headers, timeout=10, **kwargs)


def restart_from_root() -> None:
    """After a failed test here: a full restart from / mends what it left half-broken, for the next tests."""
    script("stop", cwd="/")
    start = script("start", cwd="/", deadline=30)
    assert start.returncode == 0, start.stderr


@contextlib.contextmanager
def node_held(slurm: dict[str, str], partition: str):
    """The node's every core held by one running job of the test user in ``partition``; its id."""
    occupy = ["sbatch", "--parsable", "-p", partition, "--exclusive", "-N1", "-J", "busy-node", "-o", "/dev/null"]
    occupy += ["--chdir=/tmp", "--uid", slurm["SLURM_TEST_USER"], "--wrap", "sleep 600"]
    busy = subprocess.run(occupy, capture_output=True, text=True, check=True).stdout.strip()
    try:
        wait_for(lambda: squeue("-j", busy, "-o", "%T").strip() == "RUNNING", timeout=60, interval=0.2)
        yield busy
    finally:
        subprocess.run(["scancel", busy], check=True)


@pytest.mark.slurm
def test_start_succeeds_while_every_core_is_busy(slurm):
    """The health check must not need an idle core: a node full of jobs is a healthy node."""
    with node_held(slurm, slurm["SLURM_PARTITION"]):
        start = script("start")
        assert start.returncode == 0, start.stderr
        assert squeue("-n", "slurm-local-health", "-o", "%i") == ""  # its health check left no job behind


@pytest.mark.slurm
def test_start_preempts_no_best_effort_job(slurm):
    """Its health check is a job like any user's: on a node full of best-effort jobs it waits, it does not
    preempt one (a test restarting Slurm saw its job requeued by the health check, and run twice)."""
    with node_held(slurm, slurm["SLURM_BESTEFFORT_PARTITION"]) as busy:
        start = script("start")
        assert start.returncode == 0, start.stderr
        record = subprocess.run(["scontrol", "-o", "show", "job", busy], capture_output=True, text=True).stdout
        assert "JobState=RUNNING" in record and "Restarts=0" in record, record


@pytest.mark.slurm
def test_the_daemons_outlive_the_folder_that_started_them(slurm):
    """CI starts Slurm from a fresh 0700 clone that is deleted afterwards; the next clone's run must find it
    whole. A slurmrestd left in a deleted folder still answers pings but exits at its first job submission."""
    first = Path(tempfile.mkdtemp(prefix="slurm-local-first-"))  # 0700, like a fresh clone
    second = Path(tempfile.mkdtemp(prefix="slurm-local-second-"))
    try:
        stop = script("stop", cwd=first)
        assert stop.returncode == 0, stop.stderr
        start = script("start", cwd=first)
        assert start.returncode == 0, start.stderr
        shutil.rmtree(first)
        start = script("start", cwd=second)
        assert start.returncode == 0, start.stderr
        cwds = {d: os.readlink(f"/proc/{owned_pid(d)}/cwd") for d in DAEMONS}
        assert all(cwds[d] in OWN_FOLDERS[d] for d in DAEMONS), cwds
        # what the deleted folder broke: a job submitted through slurmrestd (it sets the job's default folder)
        env = ci_env()
        job = {
            "name": "slurm-local-rest",
            "partition": env["SLURM_PARTITION"],
            "current_working_directory": "/",
            "environment": {"PATH": "/bin:/usr/bin"},
            "standard_output": "/dev/null",
        }
        answer = rest(env, "POST", "job/submit", json={"job": job, "script": "#!/bin/sh\ntrue\n"})
        assert answer.status_code == 200 and answer.json()["job_id"], answer.text
        job_id = answer.json()["job_id"]

        def completed() -> bool:
            return rest(env, "GET", f"job/{job_id}").json()["jobs"][0]["job_state"] == "COMPLETED"

        wait_for(completed, timeout=60, interval=0.2)
        status = script("status", cwd=second)
        assert status.returncode == 0, status.stdout + status.stderr
        assert "DOWN" not in status.stdout
    except BaseException:
        restart_from_root()
        raise
    finally:
        shutil.rmtree(first, ignore_errors=True)
        shutil.rmtree(second, ignore_errors=True)


@pytest.mark.slurm
def test_start_restarts_a_slurmrestd_that_is_alive_but_does_not_answer(slurm):
    frozen = owned_pid("slurmrestd")
    os.kill(frozen, signal.SIGSTOP)  # this daemon, by its pid: alive, listening, silent
    try:
        status = script("status")
        assert status.returncode != 0
        assert [line.split(":")[0] for line in status.stdout.splitlines() if "DOWN" in line] == ["slurmrestd"]
        start = script("start")
        assert start.returncode == 0, start.stderr
        assert f"slurmrestd (pid {frozen}) fails its check" in start.stderr
        assert owned_pid("slurmrestd") != frozen
        assert not Path(f"/proc/{frozen}").exists() or "State:\tZ" in Path(f"/proc/{frozen}/status").read_text()
        status = script("status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert rest(ci_env(), "GET", "ping").status_code == 200
    except BaseException:
        if Path(f"/proc/{frozen}").exists():
            os.kill(frozen, signal.SIGCONT)
        restart_from_root()
        raise


@pytest.mark.slurm
def test_start_names_the_service_it_cannot_bring_back_and_checks_the_others(slurm):
    os.kill(owned_pid("slurmrestd"), signal.SIGTERM)
    env = ci_env()
    port = int(env["SLURMRESTD_URL"].rsplit(":", 1)[1])
    try:
        wait_for(lambda: rest_refused(env), timeout=15, interval=0.1)
        with squatting(port):  # another program holds slurmrestd's port: it cannot start
            start = script("start", deadline=3)
            assert start.returncode != 0
            failures = [line for line in start.stderr.splitlines() if line.startswith("slurm-local: FAILED")]
            assert len(failures) == 1 and failures[0].startswith("slurm-local: FAILED slurmrestd:"), start.stderr
            status = script("status")
            assert status.returncode != 0
            down = [line.split(":")[0] for line in status.stdout.splitlines() if "DOWN" in line]
            assert down == ["slurmrestd"], status.stdout
        start = script("start")
        assert start.returncode == 0, start.stderr
        assert rest(ci_env(), "GET", "ping").status_code == 200
    except BaseException:
        restart_from_root()
        raise


@contextlib.contextmanager
def squatting(port: int):
    """Listen on 127.0.0.1:``port`` (despite the TIME_WAIT connections of the slurmrestd just killed) and close
    every connection at once: slurmrestd cannot bind it, and a REST ping fails fast instead of timing out."""
    stop = threading.Event()
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen()
        sock.settimeout(0.1)

        def refuse():
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    sock.accept()[0].close()

        thread = threading.Thread(target=refuse, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


def rest_refused(env: dict[str, str]) -> bool:
    try:
        rest(env, "GET", "ping")
    except httpx.ConnectError:
        return True
    return False
