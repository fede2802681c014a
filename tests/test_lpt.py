"""lpt: the longest work first where it shortens the makespan, CiGri's order elsewhere, with a reserve of free
slots for short work (issue 21)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cigri.errors import ConfigError
from cigri.model import CampaignType
from cigri.scheduling import CampaignView, ClusterView, Demand, Snapshot, metascheduler


def campaign(cid: int, waiting: int, estimate: float | None, *, at: float = 0.0, priority: int = 0) -> CampaignView:
    return CampaignView(
        cid, CampaignType.DEFAULT, "u", at, waiting, {"c0": Demand(1, 10**6)}, priority=priority, estimate=estimate
    )


def launched(*campaigns: CampaignView, free: int, options: dict | None = None) -> dict[int, int]:
    snapshot = Snapshot(0.0, (ClusterView("c0", free, 0, slots=free),), campaigns)
    return {a.campaign_id: a.jobs for a in metascheduler("lpt", options).decide(snapshot, {}).launches}


def test_the_longest_jobs_go_first_whatever_the_campaigns_age():
    assert launched(campaign(1, 5, 1200.0, at=0), campaign(2, 5, 1800.0, at=10), free=7) == {2: 5, 1: 2}


def test_a_campaign_without_an_estimate_goes_first_its_jobs_may_be_the_longest():
    assert launched(campaign(1, 5, 1800.0, at=0), campaign(2, 5, None, at=10), free=7) == {2: 5, 1: 2}


def test_a_campaign_without_an_estimate_stays_first_while_its_jobs_run():
    """How long its running jobs have run is a floor of its duration, not an estimate: small.yaml's long-b
    (jobs of 600-1,800 s) lost its turn 15 s after its first jobs started, its floor 5 s, and its jobs started
    over 2,400 s behind a sweep of 60-s jobs (the last one on beta when its outage came)."""
    older = campaign(1, 1000, 60.0, at=0)
    young = replace(campaign(2, 20, None, at=10), ran_for=5.0)
    assert launched(older, young, free=20) == {2: 18, 1: 2}, "the older one's reserve left"


def test_long_work_that_cannot_set_the_end_keeps_cigris_order():
    """Longest first only where it shortens the makespan: 20 jobs of 300 s fit in the 3,300 s the older
    campaign's work and theirs take on 20 slots, so the older one keeps its turn (its users' latency); 20 jobs
    of 3,000 s started after it would end last."""
    older = campaign(1, 1000, 60.0, at=0)
    assert launched(older, campaign(2, 20, 300.0, at=10), free=20) == {1: 20}
    assert launched(older, campaign(2, 20, 3000.0, at=10), free=20) == {2: 18, 1: 2}, "its reserve left"


def test_a_higher_priority_goes_before_longer_work():
    assert launched(campaign(1, 5, 60.0, priority=1), campaign(2, 5, 1800.0), free=7) == {1: 5, 2: 2}


def test_short_work_behind_long_work_gets_its_reserve_of_the_free_slots():
    """Eagle's short partition: of 20 free slots, 10 % go first to short campaigns (estimate below cutoff)."""
    long_, short = campaign(1, 100, 1800.0, at=0), campaign(2, 100, 30.0, at=10)
    assert launched(long_, short, free=20) == {2: 2, 1: 18}
    assert launched(long_, short, free=3) == {2: 1, 1: 2}, "at least one slot when any is free"
    assert launched(long_, short, free=20, options={"short_share": 0.0}) == {1: 20}
    assert launched(long_, campaign(2, 1, 30.0), free=20) == {2: 1, 1: 19}, "what short work leaves goes on"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"short_share": 1.0}, r"^metasched\.lpt\.short_share: must be below 1"),
        ({"cutoff": 0}, r"^metasched\.lpt\.cutoff: must be > 0"),
        ({"bogus": 1}, r"^metasched\.lpt\.bogus: unknown option"),
    ],
)
def test_bad_options_are_refused_naming_them(options, message):
    with pytest.raises(ConfigError, match=message):
        metascheduler("lpt", options)
