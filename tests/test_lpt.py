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


def test_a_campaign_without_an_estimate_sends_a_probe_per_cluster_first_then_waits_behind_longer_work():
    """trace.yaml: a campaign of 2,500-s jobs with no estimate yet took 177 of c1's 200 slots as they freed,
    ahead of the last 175 jobs of a campaign of 17,300-s jobs, which then waited in the bag for a slower
    cluster and set the makespan. Its probe jobs tell its duration; until then it ranks by what they show."""
    known, unknown = campaign(1, 10, 1800.0, at=0), campaign(2, 5, None, at=10)
    assert launched(known, unknown, free=7) == {2: 1, 1: 6}, "its probe, then the longer work"
    assert launched(known, replace(unknown, active=1, ran_for=5.0), free=7) == {1: 7}, "probing already"
    assert launched(campaign(1, 5, 1800.0), unknown, free=7) == {2: 2, 1: 5}, "its probe, then what is left"


def test_a_campaign_without_an_estimate_goes_first_once_its_probes_ran_longer_than_the_known_work():
    """How long its running jobs have run is a floor of its duration: small.yaml's long-b (jobs of 600-1,800 s)
    goes before a sweep of 60-s jobs once its probes ran over 60 s, so its jobs do not start 2,400 s behind
    the sweep."""
    older = campaign(1, 1000, 60.0, at=0)
    young = replace(campaign(2, 20, None, at=10), active=1)
    assert launched(older, replace(young, ran_for=5.0), free=20) == {1: 20}
    assert launched(older, replace(young, ran_for=65.0), free=20) == {2: 18, 1: 2}, "the older one's reserve left"


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
