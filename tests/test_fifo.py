"""fifo, the baseline: higher JDL priority first, then the oldest campaign."""

from __future__ import annotations

from cigri.model import CampaignType
from cigri.scheduling import CampaignView, ClusterView, Demand, Snapshot, metascheduler


def campaign(cid: int, waiting: int, *, at: float, priority: int = 0) -> CampaignView:
    return CampaignView(cid, CampaignType.DEFAULT, "u", at, waiting, {"c0": Demand(1, 10**6)}, priority=priority)


def launched(*campaigns: CampaignView, free: int) -> dict[int, int]:
    snapshot = Snapshot(0.0, (ClusterView("c0", free, 0),), campaigns)
    return {a.campaign_id: a.jobs for a in metascheduler("fifo").decide(snapshot, {}).launches}


def test_the_oldest_campaign_goes_first_at_equal_priority():
    assert launched(campaign(1, 5, at=10), campaign(2, 5, at=0), free=7) == {2: 5, 1: 2}


def test_a_higher_priority_goes_before_an_older_campaign():
    assert launched(campaign(1, 5, at=10, priority=2), campaign(2, 5, at=0), free=7) == {1: 5, 2: 2}
    assert launched(campaign(1, 5, at=10, priority=-1), campaign(2, 5, at=20), free=7) == {2: 5, 1: 2}
