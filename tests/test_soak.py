"""Crash soak: ``grid almighty --loop`` SIGKILLed again and again at random points while a campaign runs, on
the local cluster and on the real Slurm (ssh and REST). Each job appends its name to a file on the cluster's
side when it starts: read back as the cluster's user, every name is there exactly once, and ``grid admin
check`` finds the state consistent.

The kill delays are seeded: the seed is printed (shown when a test fails); set CIGRI_SOAK_SEED to replay
one. Each kill lands somewhere between the interpreter's start and a few passes in: before the first pass,
while a batch is recorded or submitted, while the updator collects, while nikita or the next pass runs.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from cigri.adapters import AdapterContext
from cigri.adapters.slurm import SlurmSsh
from cigri.adapters.transport import SshRunner
from cigri.clock import RealClock
from cigri.model import Cluster, JobSpec
from cigri.store import Store

from .conftest import PYTHON, wait_for, write_jdl
from .slurm import job_script, rest_cluster_options, ssh_cluster_options, ssh_config

KILLS = 100  # per adapter and per run of the suite
# Seconds from the almighty's start to its SIGKILL, drawn uniformly. Measured: a ``grid`` process starts its
# first pass 0.3 s after its start; a pass on the local cluster takes about 0.1 s, on Slurm 0.45 to 0.8 s (ssh
# or REST: collection ends about 0.8 s after the start, the submissions about 1.0 s): the kills cover the
# start, the first pass and, for some, the passes after it.
LOCAL_DELAY = (0.05, 0.7)
SLURM_DELAY = (0.05, 1.0)
PERIOD = "0.2"  # --period of the killed almighty: a pass at least this often
LOGGED_BY = re.compile(r"^\S+ \S+ (\d+) cigri", re.MULTILINE)  # almighty.log's date, time and process id


@dataclass
class Soak:
    kills: int
    seconds: float
    acted: int  # kills of an almighty that had logged an action (a submission, a job seen running or ended...)


def seed() -> int:
    value = int(os.environ.get("CIGRI_SOAK_SEED") or random.SystemRandom().randrange(2**32))
    print(f"soak seed {value} (CIGRI_SOAK_SEED={value} replays these kill delays)")
    return value


def kill_loop(state: Path, rng: random.Random, kills: int, delay: tuple[float, float]) -> Soak:
    """Start ``grid almighty --loop`` and SIGKILL it after a random delay, ``kills`` times."""
    began = time.monotonic()
    pids = set()
    for _ in range(kills):
        loop = subprocess.Popen(
            [PYTHON, "-m", "cigri", "--state", str(state), "almighty", "--loop", "--period", PERIOD],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            time.sleep(rng.uniform(*delay))  # the kill point itself, not a wait for anything
        finally:
            loop.send_signal(signal.SIGKILL)
            loop.wait()
            pids.add(loop.pid)
    log = state.parent / "almighty.log"  # absent when every almighty died before logging (a loaded box)
    logged = {int(pid) for pid in LOGGED_BY.findall(log.read_text() if log.exists() else "")}
    return Soak(kills, time.monotonic() - began, len(pids & logged))


def soak(
    cli, state: Path, jdl: Path, names: list[str], records: Callable[[], list[str]], delay: tuple[float, float]
) -> None:
    """Submit the campaign, kill its almighty KILLS times, let it finish; each job ran once, the state is
    consistent."""
    rng = random.Random(seed())
    cid = cli.submit(jdl)
    figures = kill_loop(state, rng, KILLS, delay)
    done_under_kills = cli.json("gridstat", "-c", str(cid))["done"]
    drain = time.monotonic()
    cli.until_done(timeout=180)
    drain = time.monotonic() - drain
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"], row["total"]) == ("terminated", len(names), len(names)), row
    ran = Counter(line.split()[0] for line in records())
    assert {name: n for name, n in ran.items() if n != 1} == {}, "jobs run more than once"
    assert sorted(ran) == sorted(names), "jobs never run"
    assert cli("admin", "check") == ""
    print(
        f"soak: {len(names)} jobs, {figures.kills} kills in {figures.seconds:.0f} s ({figures.acted} after the "
        f"almighty acted), {done_under_kills} jobs done by then, the rest in {drain:.0f} s"
    )


def params(prefix: str, n: int, seconds: float) -> list[str]:
    return [f"{prefix}{i:03d} sleep {seconds}" for i in range(n)]


# ---- the local cluster ----------------------------------------------------------------------------


def test_the_local_cluster_survives_a_hundred_kills_of_a_looping_almighty(cli, state, tmp_path):
    cli("gridclusters", "set", "local", "--slots", "4")
    jobs = params("l", 240, 0.5)
    script = job_script(tmp_path)
    jdl = write_jdl(tmp_path, exec_file=str(script), params=jobs)
    names = [p.split()[0] for p in jobs]
    soak(cli, state, jdl, names, lambda: (tmp_path / "runs.log").read_text().splitlines(), LOCAL_DELAY)


# ---- the real Slurm ---------------------------------------------------------------------------------


def cluster_records(slurm: dict[str, str], folder: Path) -> Callable[[], list[str]]:
    """The jobs' records, read through ssh as the cluster's user."""

    def read() -> list[str]:
        host, user, port, key = (slurm[k] for k in ("SSH_HOST", "SLURM_TEST_USER", "SSH_PORT", "SSH_KEY"))
        runner = SshRunner(host, user=user, port=int(port), identity_file=key)
        result = runner.run(["cat", str(folder / "runs.log")])
        assert result.ok, result.describe()
        return result.stdout.splitlines()

    return read


@pytest.fixture
def cancel_leftovers(state):
    """Whatever happens, the soak's jobs still queued or running on Slurm are cancelled at the end (by their
    names, which hold this state's instance: other tests' jobs are left alone)."""
    yield
    store = Store(state)
    prefix = f"cigri.{store.instance}."
    store.close()
    listing = subprocess.run(["squeue", "-h", "-o", "%A %j"], capture_output=True, text=True)
    ours = [line.split()[0] for line in listing.stdout.splitlines() if line.split()[-1].startswith(prefix)]
    if ours:
        subprocess.run(["scancel", *ours], check=False)


@pytest.mark.slurm
def test_slurm_over_ssh_survives_a_hundred_kills_of_a_looping_almighty(cli, state, slurm, shared_dir, cancel_leftovers):
    cli("gridclusters", "add", "slurm", "--adapter", "slurm-ssh", *ssh_cluster_options(slurm, shared_dir / "cigri"))
    jobs = params("s", 200, 1)
    script = job_script(shared_dir)
    jdl = write_jdl(
        shared_dir, exec_file=str(script), exec_directory=str(shared_dir), params=jobs, clusters={"slurm": {}}
    )
    soak(cli, state, jdl, [p.split()[0] for p in jobs], cluster_records(slurm, shared_dir), SLURM_DELAY)


@pytest.mark.slurm
def test_slurm_over_rest_survives_a_hundred_kills_of_a_looping_almighty(
    cli, state, slurm, shared_dir, tmp_path, cancel_leftovers
):
    options = rest_cluster_options(slurm, tmp_path / "token")
    cli("gridclusters", "add", "rest", "--adapter", "slurm-rest", *options, "--output-dir", str(shared_dir))
    jobs = params("r", 200, 1)
    script = job_script(shared_dir)
    jdl = write_jdl(
        shared_dir, exec_file=str(script), exec_directory=str(shared_dir), params=jobs, clusters={"rest": {}}
    )
    soak(cli, state, jdl, [p.split()[0] for p in jobs], cluster_records(slurm, shared_dir), SLURM_DELAY)


# ---- a kill point the random delays seldom reach ----------------------------------------------------

SLOW_SBATCH = """#!/bin/sh
# sbatch, once the test lets it go; each call leaves "start" then "end" in calls.log
here=$(dirname "$0")
echo start >> "$here/calls.log"
while [ ! -e "$here/go" ]; do sleep 0.05; done
/usr/bin/sbatch "$@"; code=$?
echo end >> "$here/calls.log"
exit $code
"""

SUBMIT = """
import json, sys
from pathlib import Path
from cigri.adapters import AdapterContext
from cigri.adapters.slurm import SlurmSsh
from cigri.clock import RealClock
from cigri.model import Cluster, JobSpec
config, key, folder = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
adapter = SlurmSsh(Cluster("slurm", "slurm-ssh", config), AdapterContext(Path(folder), RealClock()))
print(adapter.submit(key, [JobSpec(1, 1, "once", ("true",), folder, 60, user="cigri")]))
"""


@pytest.mark.slurm
def test_a_submission_whose_almighty_died_in_a_slow_sbatch_is_not_made_twice(slurm, shared_dir, tmp_path):
    """SIGKILL does not reach the ssh client the killed almighty ran: its sbatch goes on on the cluster. The
    next pass, which did not find the batch there yet, must not submit it a second time."""
    bin_dir = shared_dir / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(SLOW_SBATCH)
    (bin_dir / "sbatch").chmod(0o755)
    for command in ("squeue", "scancel", "sinfo", "scontrol", "sacct"):
        (bin_dir / command).symlink_to(f"/usr/bin/{command}")
    bin_dir.chmod(0o777)
    config = ssh_config(slurm, shared_dir / "cigri", bin_dir=str(bin_dir))
    key = f"cigri.soaktest-{os.getpid()}.1.b.1"
    calls = bin_dir / "calls.log"
    dying = subprocess.Popen([PYTHON, "-c", SUBMIT, json.dumps(config), key, str(shared_dir)])
    try:
        wait_for(lambda: calls.exists(), timeout=30)  # its sbatch waits on the cluster
    finally:
        dying.send_signal(signal.SIGKILL)
        dying.wait()
    adapter = SlurmSsh(Cluster("slurm", "slurm-ssh", config), AdapterContext(tmp_path, RealClock()))
    try:
        assert adapter.find_batch(key) is None  # not submitted yet: the next pass submits it
        (bin_dir / "go").touch()
        ids = adapter.submit(key, [JobSpec(1, 1, "once", ("true",), str(shared_dir), 60, user="cigri")])
        wait_for(lambda: calls.read_text().count("end") == calls.read_text().count("start"), timeout=30)
        assert calls.read_text().split() == ["start", "end"]  # one sbatch: the one of the killed pass
        assert adapter.find_batch(key) == ids
    finally:
        subprocess.run(["scancel", "--name", key], check=False)  # however many arrays were submitted
        adapter.close()
