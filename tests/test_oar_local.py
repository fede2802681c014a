"""scripts/oar-local.sh: `start` on an OAR that is up (idempotent, from a folder since deleted), `status`, and a
daemon it started that died, brought back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from .conftest import wait_for

pytestmark = pytest.mark.oar

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "scripts" / "oar-local.sh"
RUN = Path("/run/oar-local")
DAEMONS = ("postgresql", "oar-node-sshd", "oar-server", "oar-api", "sshd")


def script(command: str, cwd: Path | str = ROOT) -> subprocess.CompletedProcess:
    """The script by its absolute path, from ``cwd``, with the bare environment CI gives it."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "OAR_LOCAL_DEADLINE": "60"}
    return subprocess.run([str(SCRIPT), command], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def owned() -> dict[str, str]:
    """The "pid starttime" record of each daemon the script started."""
    return {daemon: (RUN / f"owned.{daemon}").read_text().strip() for daemon in DAEMONS}


def test_start_on_a_running_oar_changes_nothing_and_everything_listens_on_localhost(real_oar):
    before = owned()
    with tempfile.TemporaryDirectory() as folder:  # CI's clone is deleted after the run
        started = script("start", cwd=folder)
    assert started.returncode == 0, started.stderr
    assert owned() == before  # nothing restarted
    assert "oar-local: up: OAR 2.5.9, 4 cores on localhost" in started.stderr
    status = script("status")
    assert status.returncode == 0, status.stdout
    assert [line.split(":")[0] for line in status.stdout.splitlines()] == [*DAEMONS, "env"]
    for daemon, record in owned().items():
        assert os.readlink(f"/proc/{record.split()[0]}/cwd") in ("/", "/var/lib/postgresql/15/oar"), daemon
    listening = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True).stdout
    ports = {int(port): address for address, port in re.findall(r"\s(\S+):(\d+)\s", listening)}
    assert {port: ports[port] for port in (5433, 6667, 6670, 2223)} == dict.fromkeys(
        (5433, 6667, 6670, 2223), "127.0.0.1"
    )
    assert ports[6666] == "0.0.0.0"  # Almighty's: nothing in OAR's configuration changes it
    assert dict(line.split("=", 1) for line in script("env").stdout.splitlines()) == real_oar


def test_a_daemon_that_died_is_named_by_status_and_brought_back_by_start(real_oar):
    pid = int((RUN / "owned.oar-node-sshd").read_text().split()[0])
    os.kill(pid, signal.SIGTERM)  # this daemon, by the pid the script recorded
    wait_for(lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2])
    status = script("status")
    assert status.returncode == 1
    assert [line for line in status.stdout.splitlines() if "DOWN" in line] == [
        "oar-node-sshd: DOWN (ssh as oar to localhost:6667 failed; no process started by this script)"
    ]
    started = script("start")
    assert started.returncode == 0, started.stderr
    assert "started oar-node-sshd" in started.stderr and script("status").returncode == 0
