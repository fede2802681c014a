"""Checkpoints end to end on the local cluster, through the real cycle: a job that checkpoints (by its exit
code, or on its signal before the walltime) resumes from its file, with CIGRI_RESUME=1, before the fresh jobs
of its campaign and on the cluster that holds its checkpoint; it is no failure and no attempt."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from cigri import campaigns as ops
from cigri import clusters, config
from cigri.adapters.slurm import args_lines, batch_options, job_script
from cigri.clock import RealClock
from cigri.jdl import load
from cigri.model import CampaignState, EventCode, JobSpec, JobState

from .conftest import wait_for, write_jdl

# a job that works in one step, saving it in <name>.ckpt when asked to checkpoint, and resumes from it
SCRIPT = """#!/bin/sh
name=$1; shift
here=$(dirname "$0")
echo "$name $CIGRI_RESUME" >> "$here/runs.log"
saved="$here/$name.ckpt"
if [ "$CIGRI_RESUME" = 1 ]; then
  [ -e "$saved" ] || { echo "no checkpoint for $name" >&2; exit 5; }
  echo "$name from $(cat "$saved")" >> "$here/resumed.log"
  exit 0
fi
case "$1" in
  code:*) echo half > "$saved"; exit "${1#code:}" ;;
  signal) trap 'echo half > "$saved"' USR2; while :; do sleep 30 & wait $!; done ;;  # killed at its walltime
esac
"""


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "ckpt.sh"
    path.write_text(SCRIPT)
    path.chmod(0o755)
    return path


def lines(tmp_path: Path, name: str) -> list[str]:
    path = tmp_path / name
    return path.read_text().splitlines() if path.exists() else []


def run_campaign(store, cycle, jdl: Path, timeout: float = 40) -> int:
    cid = ops.submit(store, load(jdl), RealClock())[0]
    wait_for(lambda: (cycle.run(), store.campaign(cid).state == CampaignState.TERMINATED)[1], timeout=timeout)
    return cid


def test_a_job_exiting_with_its_checkpoint_code_resumes_before_the_fresh_jobs(store, cycle, tmp_path, script):
    clusters.set_options(store, "local", {"slots": 1, "queue_depth": 0, "idle_exit": 2})
    params = ["a code:68", "b", "c"]
    jdl = write_jdl(tmp_path, exec_file=str(script), params=params, checkpointing_type="exit-code")
    cid = run_campaign(store, cycle, jdl)
    assert lines(tmp_path, "runs.log") == ["a 0", "a 1", "b 0", "c 0"]
    assert lines(tmp_path, "resumed.log") == ["a from half"]
    job = store.job(1)
    assert (job.state, job.resubmits, job.resumes) == (JobState.TERMINATED, 0, 1), "no attempt spent"
    assert job.checkpoint_cluster == "local"
    assert store.events(campaign_id=cid, open_only=False) == []


def test_a_job_killed_at_its_walltime_after_its_signal_resumes(store, cycle, tmp_path, script):
    jdl = write_jdl(
        tmp_path,
        exec_file=str(script),
        params=["s signal"],
        walltime=3,
        checkpointing_type="signal",
        checkpointing_grace=2,
        max_attempts=1,
    )
    cid = run_campaign(store, cycle, jdl)
    assert lines(tmp_path, "runs.log") == ["s 0", "s 1"]
    assert lines(tmp_path, "resumed.log") == ["s from half"], "it saved its work on the signal, 1 s in"
    assert store.job(1).state == JobState.TERMINATED and store.events(campaign_id=cid, open_only=False) == []


def test_without_checkpointing_the_same_job_is_a_walltime_kill(store, cycle, tmp_path, script):
    jdl = write_jdl(tmp_path, exec_file=str(script), params=["s signal"], walltime=3, max_attempts=1)
    cid = ops.submit(store, load(jdl), RealClock())[0]
    wait_for(lambda: (cycle.run(), store.events(campaign_id=cid))[1], timeout=30)
    assert [e.code for e in store.events(campaign_id=cid)] == [EventCode.RESUBMIT_LIMIT, EventCode.BLACKLIST]
    assert lines(tmp_path, "resumed.log") == [] and not (tmp_path / "s.ckpt").exists()


@pytest.mark.parametrize(("configured", "resumed"), [(None, False), (42, True)])
def test_the_checkpoint_code_is_configurable(store, cycle, tmp_path, script, configured, resumed):
    if configured is not None:
        config.set_value(store, "checkpoint.exit_code", configured)
    jdl = write_jdl(tmp_path, exec_file=str(script), params=["x code:42"], checkpointing_type="exit-code")
    cid = ops.submit(store, load(jdl), RealClock())[0]
    over = (lambda: store.campaign(cid).state == CampaignState.TERMINATED) if resumed else store.events
    wait_for(lambda: (cycle.run(), over() if resumed else over(campaign_id=cid))[1], timeout=30)
    assert lines(tmp_path, "resumed.log") == (["x from half"] if resumed else [])


def test_a_checkpointed_job_resumes_on_the_cluster_holding_its_checkpoint(store, cycle, tmp_path, script):
    clusters.add(store, "second", "local", {"slots": 1, "idle_exit": 2}, RealClock())
    clusters.set_options(store, "local", {"slots": 1, "idle_exit": 2})
    params = [f"j{i} code:68" for i in range(6)]
    both = {"local": {}, "second": {}}
    jdl = write_jdl(tmp_path, exec_file=str(script), params=params, clusters=both, checkpointing_type="exit-code")
    cid = run_campaign(store, cycle, jdl, timeout=60)
    try:
        jobs = list(store.jobs(cid))
        first = {job.id: store.job_ends(job.id)[0][0] for job in jobs}
        assert set(first.values()) == {"local", "second"}, "both clusters took jobs"
        assert {job.id: job.cluster for job in jobs} == first
        assert sorted(lines(tmp_path, "resumed.log")) == [f"j{i} from half" for i in range(6)]
    finally:
        cycle.adapter("second").stop()


def test_the_slurm_job_script_passes_the_checkpoint_signal_on_to_the_job(tmp_path):
    """Slurm signals the batch shell (--signal=B:USR2@grace): the script hands the signal to the job and
    exits with the job's own status. Run here as slurmd runs task 1 (the real Slurm: test_slurm_resubmit)."""
    job = tmp_path / "job.sh"
    job.write_text(
        f"#!/bin/sh\ntrap 'kill $nap; echo saved > {tmp_path}/saved; exit 68' USR2\ntouch {tmp_path}/started\n"
        "sleep 60 & nap=$!; wait $nap\n"
    )
    job.chmod(0o755)
    spec = JobSpec(1, 7, "a", (str(job),), str(tmp_path), 120, checkpoint_signal="USR2", checkpoint_grace=90)
    assert "--signal=B:USR2@90" in batch_options(spec, {}, "/home", "clusters.s")
    (tmp_path / "args").write_text(args_lines([spec], str(tmp_path)))
    task = {"PATH": os.environ["PATH"], "SLURM_ARRAY_TASK_ID": "1", "SLURM_JOB_ID": "5", "TMPDIR": str(tmp_path)}
    shell = subprocess.Popen(["sh", "-c", job_script(spec, "/home", f"cat {tmp_path}/args", f"{tmp_path}/")], env=task)
    wait_for(lambda: (tmp_path / "started").exists())
    shell.send_signal(signal.SIGUSR2)
    assert shell.wait(timeout=10) == 68
    assert (tmp_path / "saved").read_text() == "saved\n"
