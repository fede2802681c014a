"""finalize (the 2009 design's campaign mode): a campaign's last jobs replicated on idle slots of other clusters."""

from __future__ import annotations

import pytest

from cigri.errors import JdlError
from cigri.jdl import parse
from cigri.model import CampaignType
from cigri.scheduling import (
    Assignment,
    CampaignView,
    ClusterView,
    Decision,
    Demand,
    GridJob,
    Replica,
    Snapshot,
)
from cigri.scheduling.finalize import replicas


def campaign(cid=1, *, waiting=0, finalize=True, clusters=("a", "b", "c"), slots=1, limit=100, **kw):
    demands = {name: Demand(slots, limit) for name in clusters}
    return CampaignView(cid, CampaignType.DEFAULT, "u", float(cid), waiting, demands, finalize=finalize, **kw)


def job(job_id, cid=1, *, started=None, submitted=0.0, slots=1, replica=False, replicated=False):
    return GridJob(job_id, cid, slots, submitted, started, replica=replica, replicated=replicated)


def snapshot(campaigns, **clusters):
    """clusters: name=(free, jobs)"""
    views = tuple(ClusterView(name, free, 0, jobs=tuple(jobs)) for name, (free, jobs) in clusters.items())
    return Snapshot(100.0, views, tuple(campaigns))


def test_the_last_jobs_go_to_idle_slots_of_other_clusters():
    snap = snapshot([campaign()], a=(0, [job(1, started=5.0), job(2, started=3.0)]), b=(1, []), c=(2, []))
    # the oldest start first, each where the most slots are left
    assert replicas(snap, Decision()) == (Replica("c", 2), Replica("b", 1))


def test_running_jobs_first_oldest_start_first():
    jobs = [job(1, submitted=0.0), job(2, started=9.0), job(3, started=4.0)]
    snap = snapshot([campaign(clusters=("a", "b"))], a=(0, jobs), b=(2, []))
    # 3 active jobs, 2 free slots: not yet the campaign's end
    assert replicas(snap, Decision()) == ()
    snap = snapshot([campaign(clusters=("a", "b"))], a=(0, jobs), b=(4, []))
    assert [r.job_id for r in replicas(snap, Decision())] == [3, 2, 1]


def test_only_once_the_remaining_jobs_are_fewer_than_the_free_slots():
    jobs = [job(1, started=1.0), job(2, started=2.0)]
    assert replicas(snapshot([campaign(clusters=("a", "b"))], a=(0, jobs), b=(2, [])), Decision()) == ()
    assert len(replicas(snapshot([campaign(clusters=("a", "b"))], a=(0, jobs), b=(3, [])), Decision())) == 2


def test_slots_are_counted_in_jobs_of_the_campaigns_size():
    jobs = [job(1, started=1.0, slots=2)]
    assert replicas(snapshot([campaign(clusters=("a", "b"), slots=2)], a=(0, jobs), b=(3, [])), Decision()) == ()
    placed = replicas(snapshot([campaign(clusters=("a", "b"), slots=2)], a=(0, jobs), b=(4, [])), Decision())
    assert placed == (Replica("b", 1),)


def test_nothing_while_jobs_wait_or_without_finalize():
    jobs = [job(1, started=1.0)]
    assert replicas(snapshot([campaign(waiting=1)], a=(0, jobs), b=(5, []), c=(5, [])), Decision()) == ()
    assert replicas(snapshot([campaign(finalize=False)], a=(0, jobs), b=(5, []), c=(5, [])), Decision()) == ()


def test_never_where_the_job_runs_nor_on_a_cluster_of_no_demand():
    jobs = [job(1, started=1.0)]
    assert replicas(snapshot([campaign(clusters=("a",))], a=(5, jobs), d=(9, [])), Decision()) == ()
    assert replicas(snapshot([campaign(clusters=("a", "b"))], a=(9, jobs), b=(1, [])), Decision()) == (Replica("b", 1),)


def test_one_replica_per_job_at_most():
    jobs_a = [job(1, started=1.0)]
    live = [job(1, started=2.0, replica=True)]
    snap = snapshot([campaign()], a=(5, jobs_a), b=(5, live), c=(5, []))
    assert replicas(snap, Decision()) == ()
    ended = [job(1, started=1.0, replicated=True)]
    assert replicas(snapshot([campaign()], a=(5, ended), b=(5, []), c=(5, [])), Decision()) == ()


def test_replicas_are_not_replicated_nor_counted_as_remaining_jobs():
    jobs_b = [job(1, started=2.0, replica=True), job(7, started=2.0)]
    snap = snapshot([campaign(clusters=("a", "b"))], a=(3, [job(1, started=1.0)]), b=(0, jobs_b))
    assert replicas(snap, Decision()) == (Replica("a", 7),)


def test_free_slots_are_those_left_after_the_launches():
    other = campaign(2, waiting=3, finalize=False)
    snap = snapshot([campaign(clusters=("a", "b")), other], a=(0, [job(1, started=1.0)]), b=(3, []))
    assert replicas(snap, Decision(launches=(Assignment("b", 2, 2),))) == ()
    assert replicas(snap, Decision(launches=(Assignment("b", 2, 1),))) == (Replica("b", 1),)


def test_a_replica_takes_a_slot_from_the_next():
    snap = snapshot(
        [campaign(1, clusters=("a", "b")), campaign(2, clusters=("a", "b"))],
        a=(0, [job(1, 1, started=1.0), job(2, 2, started=1.0)]),
        b=(2, []),
    )
    # each campaign alone: 1 job, 2 free slots; together, the first takes one and leaves one (not "fewer")
    assert replicas(snap, Decision()) == (Replica("b", 1),)


def test_the_campaigns_limit_on_a_cluster_holds():
    jobs = [job(1, started=1.0), job(2, started=2.0)]
    snap = snapshot([campaign(clusters=("a", "b"), limit=1)], a=(0, jobs), b=(5, []))
    assert replicas(snap, Decision()) == (Replica("b", 1),)


def test_the_jdl_key_is_campaign_wide_and_checked():
    base = {"name": "x", "exec_file": "run", "params": ["1"], "clusters": {"local": {}}}
    assert parse(base).finalize is False
    assert parse({**base, "FINALIZE": "true"}).as_record()["finalize"] is True
    with pytest.raises(JdlError, match=r"^finalize: expected true or false"):
        parse({**base, "finalize": "soon"})
    with pytest.raises(JdlError, match=r"^clusters\.local\.finalize: a campaign-wide key"):
        parse({**base, "clusters": {"local": {"finalize": True}}})
