"""Resubmission and checkpoints on the real local Slurm (slurm-ssh): a walltime kill retried with the walltime
retry_resources ask (the submitted job's TimeLimit), and a job checkpointing on Slurm's --signal."""

from __future__ import annotations

import re
import subprocess
import uuid
from pathlib import Path

import pytest

from cigri.adapters import AdapterContext
from cigri.adapters.slurm import SlurmSsh
from cigri.clock import RealClock
from cigri.model import Cluster, JobSpec, KillCause, RemoteState
from cigri.store import Store

from .conftest import wait_for, write_jdl
from .slurm import job_script, runs, ssh_cluster_options, ssh_config

pytestmark = pytest.mark.slurm

# checkpoints on USR2 (saves, then exits with the checkpoint code 68); resumed (CIGRI_RESUME=1), it finishes
CHECKPOINTING = """#!/bin/sh
here=$(dirname "$0")
name=$1
echo "$name resume=$CIGRI_RESUME" >> "$here/runs.log"
if [ "$CIGRI_RESUME" = 1 ]; then
  echo "$name from $(cat "$here/$name.ckpt")" >> "$here/resumed.log"
  exit 0
fi
trap 'kill "$nap"; echo half > "$here/$name.ckpt"; exit 68' USR2
sleep 600 & nap=$!; wait "$nap"
"""


@pytest.fixture
def cluster(cli, slurm, shared_dir):
    cli("gridclusters", "add", "slurm", "--adapter", "slurm-ssh", *ssh_cluster_options(slurm, shared_dir / "cigri"))
    return "slurm"


def time_limit(remote_id: str) -> str:
    """The TimeLimit slurmctld gave the job (it keeps ended jobs MinJobAge, 300 s here)."""
    shown = subprocess.run(["scontrol", "-o", "show", "job", remote_id], capture_output=True, text=True, check=True)
    return re.search(r"\bTimeLimit=(\S+)", shown.stdout).group(1)


def test_a_walltime_kill_is_retried_with_more_walltime_and_a_signal_checkpoint_resumes(cli, cluster, shared_dir, state):
    """Two campaigns at once, since each waits on Slurm's clock for a minute or two: a job killed at its
    walltime, retried with the walltime its retry_resources ask; and a job checkpointing on Slurm's --signal,
    resumed with CIGRI_RESUME=1."""
    longer, ckpt = shared_dir / "walltime", shared_dir / "checkpoint"
    for folder in (longer, ckpt):
        folder.mkdir()
        folder.chmod(0o777)
    slow = write_jdl(
        longer,
        exec_file=str(job_script(longer)),
        exec_directory=str(longer),
        params=["long slow-once 150"],
        walltime="00:01:00",
        retry_resources={"walltime": 2, "max_walltime": "00:03:00"},
        clusters={"slurm": {}},
    )
    script = ckpt / "ckpt.sh"
    script.write_text(CHECKPOINTING)
    script.chmod(0o755)
    checkpointing = write_jdl(
        ckpt,
        exec_file=str(script),
        exec_directory=str(ckpt),
        params=["c"],
        walltime="00:02:00",
        checkpointing_type="signal",
        checkpointing_grace=90,  # Slurm signals within a minute of the time asked: from 30 s to 90 s in
        clusters={"slurm": {}},
    )
    slow_id, ckpt_id = cli.submit(slow), cli.submit(checkpointing)
    cli.until_done(timeout=300)

    assert runs(longer) == ["long [slow-once] [150]"] * 2
    assert cli.json("gridstat", "-c", str(slow_id))["state"] == "terminated"
    store = Store(state)
    try:
        [(cluster_name, killed, _at, _code, cause, _why)] = store.job_ends(1)
        last = store.job(1).remote_id
    finally:
        store.close()
    assert (cluster_name, cause) == ("slurm", "walltime")
    assert (time_limit(killed), time_limit(last)) == ("00:01:00", "00:02:00")

    assert runs(ckpt) == ["c resume=0", "c resume=1"]
    assert (ckpt / "resumed.log").read_text() == "c from half\n"
    job = cli.json("gridstat", "-j", "2")
    assert (job["state"], job["resubmits"], job["resumes"], job["checkpoint_cluster"]) == ("terminated", 0, 1, "slurm")
    assert cli.json("gridevents", "-c", str(ckpt_id), "-a") == []


def test_an_administrators_scancel_is_an_admin_kill(slurm, shared_dir, tmp_path):
    config = ssh_config(slurm, shared_dir / "spool")
    adapter = SlurmSsh(Cluster("slurm", "slurm-ssh", config), AdapterContext(tmp_path, RealClock()))
    job = JobSpec(1, 1, "j1", ("sleep", "60"), str(shared_dir), 120, resources="core=1")
    ids = adapter.submit(f"cigri.causetest-{uuid.uuid4().hex[:8]}.b.1", [job])
    try:
        wait_for(lambda: adapter.states(ids)[ids[0]].state == RemoteState.RUNNING, timeout=30, interval=0.2)
        subprocess.run(["scancel", ids[0]], check=True)  # root, not cigri
        status = wait_for(
            lambda: (s := adapter.states(ids)[ids[0]]).state == RemoteState.KILLED and s, timeout=30, interval=0.2
        )
        assert (status.reason, status.cause) == ("cancelled", KillCause.ADMIN)
    finally:
        adapter.cancel(ids)
        adapter.close()


def live_task(adapter: SlurmSsh, remote_id: str) -> bool:
    return adapter.states([remote_id])[remote_id].state in (RemoteState.PENDING, RemoteState.RUNNING)


def test_a_task_slurm_kills_outright_leaves_no_node_file_in_tmp(slurm, shared_dir, tmp_path):
    """SIGKILL runs no trap (slurmstepd sends it to every process of the task after KillWait, or at once
    as CI saw on a preemption): the task's node file is in cigri's folder on the cluster, not in the node's
    /tmp. Here the task's processes are killed as slurmstepd kills them, by root, from ``scontrol listpids``."""
    spool = shared_dir / "spool"
    config = ssh_config(slurm, spool)
    adapter = SlurmSsh(Cluster("slurm", "slurm-ssh", config), AdapterContext(tmp_path, RealClock()))
    started = shared_dir / "started"
    argv = ("sh", "-c", f'echo "$CIGRI_NODE_FILE" > {started}; exec sleep 60')
    job = JobSpec(1, 1, "j1", argv, str(shared_dir), 120, resources="core=1")
    before = set(Path("/tmp").glob("cigri-nodes*"))
    ids = adapter.submit(f"cigri.killtest-{uuid.uuid4().hex[:8]}.b.1", [job])
    try:
        wait_for(lambda: started.exists() and started.read_text().strip(), timeout=30, interval=0.1)
        raw = subprocess.run(["squeue", "-h", "-o", "%A", "-j", ids[0]], capture_output=True, text=True, check=True)
        listed = subprocess.run(
            ["scontrol", "listpids", raw.stdout.strip()], capture_output=True, text=True, check=True
        )
        pids = [int(line.split()[0]) for line in listed.stdout.splitlines()[1:] if line.split()[0].isdigit()]
        assert pids, listed.stdout
        subprocess.run(["kill", "-KILL", *map(str, pids)], check=False)  # one may have ended meanwhile
        wait_for(lambda: not live_task(adapter, ids[0]), timeout=30, interval=0.2)
        assert set(Path("/tmp").glob("cigri-nodes*")) == before
        assert started.read_text().strip() == f"{spool}/out/{ids[0]}.nodes"
    finally:
        adapter.cancel(ids)
        adapter.close()
