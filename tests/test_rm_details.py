"""gridstat -j JOB -C: what the resource manager itself says of a job (CiGri's "RM details"), read now from
the cluster: the local cluster's spool record, the real Slurm's scontrol (ssh) and slurmrestd record (REST);
the OAR adapters' are in test_oar_adapters. And the refusals: one line, a non-zero exit, nothing written."""

from __future__ import annotations

import json

import pytest

from cigri.adapters import AdapterContext
from cigri.adapters.slurm import SlurmSsh, scontrol_fields
from cigri.clock import RealClock
from cigri.errors import AdapterError
from cigri.model import Cluster
from cigri.store import Store

from .conftest import write_jdl
from .slurm import rest_cluster_options, ssh_cluster_options, ssh_config
from .test_cli_errors import refuse


def test_a_local_jobs_details_are_its_spool_record(cli, tmp_path, job_script):
    cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["a ok"]))
    cli.until_done()
    record = cli.json("gridstat", "-j", "1", "-C")
    assert (record["state"], record["exit_code"], record["cwd"]) == ("exited", 0, str(tmp_path))
    assert record["argv"] == [str(job_script), "a", "ok"] and "env" not in record  # the environment may hold secrets
    table = cli("gridstat", "-j", "1", "-C").splitlines()
    assert table[0].split() == ["Field", "Value"] and ["state", "exited"] in [line.split() for line in table]
    assert cli("gridstat", "-j", "1", "-C", "-H").splitlines()[0].split()[0] != "Field"


def test_the_refusals_are_one_line_and_write_nothing(cli, state, tmp_path, job_script, monkeypatch):
    cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=["a ok", "b ok"]))
    assert "-C goes with -j JOB" in refuse(state, ["gridstat", "-C"], code=1)
    assert "job 1 has not been sent to a cluster yet" in refuse(state, ["gridstat", "-j", "1", "-C"], code=1)
    assert "no job 9" in refuse(state, ["gridstat", "-j", "9", "-C"], code=5)
    store = Store(state)
    with store.transaction():  # job 2 ran on a cluster removed since, job 1 on local under an id it forgot
        store.conn.execute("UPDATE jobs SET cluster = 'gone', remote_id = '7', state = 'terminated' WHERE id = 2")
        store.conn.execute("UPDATE jobs SET cluster = 'local', remote_id = '4242', state = 'terminated' WHERE id = 1")
    store.close()
    assert "cluster gone, where job 2 ran, is no longer in the state" in refuse(
        state, ["gridstat", "-j", "2", "-C"], code=5
    )
    assert "local: the local cluster holds no job 4242" in refuse(state, ["gridstat", "-j", "1", "-C"], code=8)
    monkeypatch.setattr("cigri.campaigns.current_user", lambda: "bob")
    assert "belongs to" in refuse(state, ["gridstat", "-j", "1", "-C"], code=6)


def test_scontrols_one_line_record_keeps_values_with_spaces_and_keys_with_colons():
    line = "JobId=12 ArrayJobId=11 ArrayTaskId=1 JobName=cigri.x.1.b.1 Comment=cigri batch of 2 tasks "
    line += "AllocNode:Sid=host:42 ReqB:S:C:T=0:0:*:* Power= WorkDir=/tmp/a b"
    assert scontrol_fields(line) == {
        "JobId": "12",
        "ArrayJobId": "11",
        "ArrayTaskId": "1",
        "JobName": "cigri.x.1.b.1",
        "Comment": "cigri batch of 2 tasks",
        "AllocNode:Sid": "host:42",
        "ReqB:S:C:T": "0:0:*:*",
        "Power": "",
        "WorkDir": "/tmp/a b",
    }


@pytest.mark.slurm
def test_the_real_slurm_says_its_own_record_of_a_task_over_ssh_and_rest(cli, slurm, shared_dir, tmp_path):
    cli("gridclusters", "add", "ssh", "--adapter", "slurm-ssh", *ssh_cluster_options(slurm, shared_dir / "cigri"))
    rest = rest_cluster_options(slurm, tmp_path / "token")
    cli("gridclusters", "add", "rest", "--adapter", "slurm-rest", *rest, "--output-dir", str(shared_dir))
    for cluster in ("ssh", "rest"):
        cli.submit(write_jdl(shared_dir, exec_file="/bin/true", params=[cluster], clusters={cluster: {}}))
    cli.until_done(timeout=120)
    jobs = {job["cluster"]: job for cid in (1, 2) for job in cli.json("gridstat", "-c", str(cid), "-f")}
    array, task = jobs["ssh"]["remote_id"].split("_")
    shown = cli.json("gridstat", "-j", str(jobs["ssh"]["id"]), "-C")
    assert (shown["ArrayJobId"], shown["ArrayTaskId"], shown["JobState"]) == (array, task, "COMPLETED")
    assert shown["UserId"].startswith(slurm["SLURM_TEST_USER"])
    array, task = jobs["rest"]["remote_id"].split("_")
    shown = cli.json("gridstat", "-j", str(jobs["rest"]["id"]), "-C")
    assert (str(shown["array_job_id"]), str(shown["array_task_id"])) == (array, task)
    assert shown["user_name"] == slurm["SLURM_TEST_USER"] and shown["name"].startswith("cigri.")
    ssh = SlurmSsh(
        Cluster("ssh", "slurm-ssh", ssh_config(slurm, shared_dir / "cigri")), AdapterContext(tmp_path, RealClock())
    )
    try:
        with pytest.raises(AdapterError, match="ssh: Slurm no longer holds job 999999_1"):
            ssh.details("999999_1")
    finally:
        ssh.close()
    assert json.loads(json.dumps(shown))  # JSON all through
