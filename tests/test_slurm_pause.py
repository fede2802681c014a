"""Pause on the real local Slurm, through both adapters: queued jobs are held (JobHeldUser) and start
only once the campaign is resumed."""

from __future__ import annotations

import subprocess

import pytest

from .conftest import wait_for, write_jdl
from .slurm import job_script, rest_cluster_options, runs, ssh_cluster_options

pytestmark = pytest.mark.slurm

JOBS = 11  # more than the node's 8 slots: some queue


@pytest.fixture(params=["slurm-ssh", "slurm-rest"])
def cluster(request, cli, slurm, shared_dir, tmp_path):
    if request.param == "slurm-ssh":
        options = ssh_cluster_options(slurm, shared_dir / "cigri")
    else:
        options = [*rest_cluster_options(slurm, tmp_path / "token"), "--output-dir", str(shared_dir)]
    cli("gridclusters", "add", "slurm", "--adapter", request.param, *options)
    return "slurm"


def slurm_tasks(remote_ids: list[str]) -> dict[str, tuple[str, str]]:
    """Slurm's (state, reason) of each task, as root sees them."""
    arrays = sorted({rid.partition("_")[0] for rid in remote_ids})
    listing = subprocess.run(
        ["squeue", "-h", "-r", "-t", "all", "-j", ",".join(arrays), "-o", "%i|%T|%r"],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = (line.split("|") for line in listing.stdout.splitlines())
    return {task: (state, reason) for task, state, reason in rows if task in remote_ids}


def test_a_paused_campaign_holds_its_queued_jobs_until_resumed(cli, cluster, shared_dir):
    script = job_script(shared_dir)
    params = [f"h{i:02d} sleep 4" for i in range(JOBS)]
    jdl = write_jdl(
        shared_dir, exec_file=str(script), exec_directory=str(shared_dir), params=params, clusters={cluster: {}}
    )
    cid = cli.submit(jdl)
    try:
        wait_for(lambda: (cli("almighty"), cli.json("gridstat", "-c", str(cid)))[1]["running"] > 0, timeout=60)
        cli("griddel", "-p", str(cid))
        cli("almighty")
        jobs = [cli.json("gridstat", "-j", str(job_id)) for job_id in range(1, JOBS + 1)]
        remote = [job["remote_id"] for job in jobs]
        queued = [job["remote_id"] for job in jobs if job["state"] == "submitted"]
        assert queued and all(job["held"] for job in jobs if job["state"] == "submitted")
        tasks = slurm_tasks(remote)
        assert {tasks[rid] for rid in queued} == {("PENDING", "JobHeldUser")}
        # the jobs that ran end and free their slots: the held ones still do not start
        wait_for(lambda: "RUNNING" not in {state for state, _ in slurm_tasks(remote).values()}, timeout=60)
        assert {slurm_tasks(remote)[rid] for rid in queued} == {("PENDING", "JobHeldUser")}
        assert len(runs(shared_dir)) == JOBS - len(queued)
        cli("griddel", "-r", str(cid))
        cli.until_done(timeout=120)
        row = cli.json("gridstat", "-c", str(cid))
        assert (row["state"], row["done"], row["held"]) == ("terminated", JOBS, 0)
        assert sorted(line.split()[0] for line in runs(shared_dir)) == [f"h{i:02d}" for i in range(JOBS)]
    finally:
        if cli.json("gridstat", "-c", str(cid))["state"] != "terminated":
            cli("griddel", str(cid))
            cli("almighty")
