"""Packing on the real local Slurm (slurm-ssh and slurm-rest): each packed job's own status and outputs, a
pack cancelled from outside cigri midway, dimensional packs taking a node."""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest

from cigri.adapters import packing
from cigri.store import Store

from .conftest import wait_for, write_jdl
from .slurm import job_script, rest_cluster_options, runs, ssh_cluster_options

pytestmark = pytest.mark.slurm


@pytest.fixture
def cluster(cli, slurm, shared_dir):
    cli("gridclusters", "add", "slurm", "--adapter", "slurm-ssh", *ssh_cluster_options(slurm, shared_dir / "cigri"))
    return "slurm"


def packed(cli, state, folder, params, cluster="slurm", mean=0.5, **settings):
    """A campaign packing its jobs on ``cluster``, whose mean duration is already known (as after its first jobs)."""
    settings.setdefault("temporal_grouping", "yes")
    script = job_script(folder)
    path = write_jdl(
        folder, exec_file=str(script), exec_directory=str(folder), params=params, clusters={cluster: settings}
    )
    cid = cli.submit(path)
    store = Store(state)
    with store.transaction():
        store.add_durations([(cid, cluster, mean, 0.0)] * 3, 60.0)
    store.close()
    return cid


def remote_ids(state, cid):
    store = Store(state)
    try:
        return [job.remote_id for job in store.jobs(cid) if job.remote_id]
    finally:
        store.close()


def test_packed_jobs_on_slurm_keep_their_own_status_and_outputs(cli, cluster, shared_dir, state):
    params = [f"ok{i}" for i in range(30)] + ["bad1 fail", "bad2 fail"]
    cid = packed(cli, state, shared_dir, params)
    cli.until_done(timeout=180, code=13)  # an open event blocks the campaign
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["failed"], row["total"]) == (30, 2, 32)
    packs = Counter(packing.split_id(rid)[0] for rid in remote_ids(state, cid))
    assert len(packs) < 32 and max(packs.values()) > 1  # fewer RM jobs than jobs
    assert sorted(line.split()[0] for line in runs(shared_dir)) == sorted(p.split()[0] for p in params)  # each once
    events = cli.json("gridevents", "-c", str(cid), "-e", "EXIT_ERROR")
    assert len(events) == 2
    assert all("exited with status 3" in e["message"] and "failing on purpose: bad" in e["message"] for e in events)
    assert cli("gridstat", "-j", "1", "-O").strip() == "ok ok0 as cigritest"


def test_a_pack_cancelled_from_outside_cigri_loses_no_job(cli, cluster, shared_dir, state):
    """Packs of 2 (3 jobs on 8 slots is 1 per pack: the slow one is given company by 16 jobs)."""
    params = ["slow slow-once 120", *[f"q{i}" for i in range(15)]]
    cid = packed(cli, state, shared_dir, params)
    cli("almighty")
    wait_for(lambda: (cli("almighty"), "slow [slow-once] [120]" in runs(shared_dir))[1], timeout=60)
    slow = next(rid for rid in remote_ids(state, cid) if packing.split_id(rid)[1] == 1)
    pack, _, size = packing.split_id(slow)
    assert size == 2
    subprocess.run(["scancel", pack], check=True)  # the admin, not cigri
    cli.until_done(timeout=180)
    counts = Counter(line.split()[0] for line in runs(shared_dir))
    assert counts == {"slow": 2, **{f"q{i}": 1 for i in range(15)}}
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["state"], row["done"]) == ("terminated", 16)
    assert cli.json("gridstat", "-j", "1")["resubmits"] == 1


def test_dimensional_packs_run_one_job_per_core_of_a_node(cli, cluster, shared_dir, state):
    cid = packed(
        cli, state, shared_dir, [f"d{i}" for i in range(8)], temporal_grouping="no", dimensional_grouping="yes"
    )
    cli.until_done(timeout=120)
    assert cli.json("gridstat", "-c", str(cid))["done"] == 8
    packs = Counter(packing.split_id(rid)[0] for rid in remote_ids(state, cid))
    assert list(packs.values()) == [8]  # the node's 8 cores: one RM job


def test_packed_jobs_through_slurmrestd(cli, slurm, shared_dir, state, tmp_path):
    options = rest_cluster_options(slurm, tmp_path / "token")
    cli("gridclusters", "add", "rest", "--adapter", "slurm-rest", *options, "--output-dir", str(shared_dir))
    params = [f"r{i}" for i in range(20)] + ["bad fail"]
    cid = packed(cli, state, shared_dir, params, cluster="rest")
    cli.until_done(timeout=180, code=13)  # an open event blocks the campaign
    row = cli.json("gridstat", "-c", str(cid))
    assert (row["done"], row["failed"]) == (20, 1)
    assert len({packing.split_id(rid)[0] for rid in remote_ids(state, cid)}) < 21
    assert "failing on purpose: bad" in cli.json("gridevents", "-c", str(cid))[0]["message"]
