"""Eagle's SRPT, sticky feeding, reserved short share and LWL (cigri.scheduling.srpt)."""

from __future__ import annotations

import heapq
import json
import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cigri.errors import ConfigError
from cigri.model import CampaignType
from cigri.scheduling import (
    CampaignView,
    ClusterView,
    Demand,
    GridJob,
    Snapshot,
    evaluator,
    metascheduler,
    registry,
)
from cigri.scheduling.srpt import Probe, choose, lwl, run_one_slot

srpt = evaluator("srpt")
lwl_policy = evaluator("lwl")


# --- one slot's choice ------------------------------------------------------------------------------------


def choice(queue, campaigns, cap=5):
    return srpt(
        {
            "cap": cap,
            "queue": [{"campaign": name, "delay": delay} for name, delay in queue],
            "campaigns": campaigns,
        }
    )


def test_smallest_remaining_work_bypasses_the_head():
    campaigns = {"A": {"est": 10, "remaining": 100}, "B": {"est": 1, "remaining": 20}}
    assert choice([("A", 0), ("B", 0)], campaigns) == {"campaign": "B", "position": 1}


def test_a_bypass_may_bring_the_delay_up_to_the_cap_and_no_further():
    campaigns = {"A": {"est": 10, "remaining": 100}, "B": {"est": 1, "remaining": 20}}
    assert choice([("A", 49), ("B", 0)], campaigns)["campaign"] == "B"  # 49 + 1 = 5 x 10
    assert choice([("A", 49.5), ("B", 0)], campaigns) == {"campaign": "A", "position": 0}
    assert choice([("A", 0), ("B", 0)], campaigns, cap=0)["campaign"] == "A"


def test_the_tightest_slack_in_front_decides():
    campaigns = {
        "A": {"est": 100, "remaining": 1000},
        "B": {"est": 2, "remaining": 500},
        "C": {"est": 3, "remaining": 30},
    }
    # A has slack 500, B has 10 - 8 = 2 < 3: C may not bypass B, so B (smaller than A, may bypass A) runs
    assert choice([("A", 0), ("B", 8), ("C", 0)], campaigns) == {"campaign": "B", "position": 1}


def test_a_long_campaign_at_the_head_runs_first():
    campaigns = {"L": {"long": True, "est": 5000, "remaining": 50000}, "S": {"est": 1, "remaining": 1}}
    assert choice([("L", 0), ("S", 0)], campaigns) == {"campaign": "L", "position": 0}
    assert choice([("S", 0), ("L", 0)], campaigns) == {"campaign": "S", "position": 0}


def test_a_campaign_with_no_job_left_is_dropped_and_an_empty_queue_chooses_nothing():
    campaigns = {"A": {"long": True, "est": 10, "remaining": -1}, "B": {"est": 10, "remaining": 300}}
    assert choice([("A", 0), ("B", 0)], campaigns) == {"campaign": "B", "position": 1}
    assert choice([("A", 0)], campaigns) == {"campaign": None, "position": -1}
    assert choice([], campaigns) == {"campaign": None, "position": -1}


def test_choose_takes_probes_by_key():
    probes = {7: Probe(False, 10, 100), 9: Probe(False, 1, 5)}
    assert choose(5, [7, 9], probes) == (9, 1)
    probes[7].delay = 50
    assert choose(5, [7, 9], probes) == (7, 0)


# --- a whole run --------------------------------------------------------------------------------------------


def test_the_worked_run_on_one_slot():
    scenario = {
        "slots": 1,
        "cap": 5,
        "campaigns": [{"name": "A", "jobs": 20, "est": 10}, {"name": "B", "jobs": 80, "est": 1}],
    }
    assert srpt(scenario) == {"runs": [["B", 50], ["A", 20], ["B", 30]]}


def test_without_a_cap_srpt_runs_the_smaller_campaign_to_its_end():
    assert run_one_slot(1, float("inf"), [("A", 20, 10), ("B", 80, 1)]) == [("B", 80), ("A", 20)]


def test_a_slot_feeds_a_campaign_until_it_is_done_or_a_cap_stops_it():
    # C (3 s of work left) runs first and stays fed to its end, then A (8 s) before B (10 s)
    assert run_one_slot(1, 5, [("A", 4, 2), ("B", 5, 2), ("C", 3, 1)]) == [("C", 3), ("A", 4), ("B", 5)]
    # C's 3 jobs bring A's and B's delays to 3: at cap 0.5 (1 s of slack for A and B) C runs once only
    assert run_one_slot(1, 0.5, [("A", 4, 2), ("B", 5, 2), ("C", 3, 1)]) == [("C", 1), ("A", 4), ("B", 5), ("C", 2)]


def test_each_slot_keeps_its_own_delays():
    # B (4 s of work left) bypasses A (10 s); at cap 2, A takes 2 s of delay, four B jobs, per slot
    assert run_one_slot(1, 2, [("A", 10, 1), ("B", 8, 0.5)]) == [("B", 4), ("A", 10), ("B", 4)]
    assert run_one_slot(2, 2, [("A", 10, 1), ("B", 8, 0.5)]) == [("B", 8), ("A", 10)]


@given(
    st.lists(st.tuples(st.integers(0, 12), st.integers(1, 20)), min_size=1, max_size=5),
    st.sampled_from([0, 1, 5]),
)
def test_no_campaign_waits_beyond_the_cap_for_those_behind_it(campaigns, cap):
    """Eagle's invariant on one slot: before a campaign's first job, the jobs of campaigns behind it that
    started add up to at most cap x its estimate; and every job runs once."""
    named = [(f"c{i}", jobs, float(est)) for i, (jobs, est) in enumerate(campaigns)]
    runs = run_one_slot(1, cap, named)
    starts = [name for name, n in runs for _ in range(n)]
    assert sorted(starts) == sorted(name for name, jobs, _ in named for _ in range(jobs))
    est = {name: e for name, _, e in named}
    order = [name for name, _, _ in named]
    for i, (name, jobs, own) in enumerate(named):
        if jobs == 0:
            continue
        first = starts.index(name)
        behind = sum(est[other] for other in starts[:first] if order.index(other) > i)
        assert behind <= cap * own


# --- LWL ----------------------------------------------------------------------------------------------------


def test_the_worked_lwl_example():
    scenario = {"jobs": 5, "est": 4, "queued_work": {"c0": 0, "c1": 10, "c2": 0, "c3": 5}}
    assert lwl_policy(scenario) == {"clusters": ["c0", "c2", "c0", "c2", "c3"]}


def test_lwl_ties_go_to_the_cluster_listed_first():
    assert lwl(3, 1, {"z": 0, "a": 0}) == ["z", "a", "z"]
    assert lwl(0, 1, {"a": 0}) == []
    assert lwl(2, 1, {}) == []


def eagle_lwl(jobs: int, est: float, queued_work: dict[str, float]) -> list[str]:
    """Eagle's find_workers_long_job_prio as it reads (its priority queue's ties: the worker listed first),
    with one worker taking all when no other is left (Eagle waits for one)."""
    if not jobs:
        return []
    order = list(queued_work)
    chosen, queue = [], []
    for name in order:
        if queued_work[name] == 0:
            chosen.append(name)
            if len(chosen) == jobs:
                return chosen
        else:
            queue.append((queued_work[name], order.index(name), name))
    queue += [(est, order.index(name), name) for name in chosen]
    heapq.heapify(queue)
    if not queue:
        return chosen
    length, _, worker = heapq.heappop(queue)
    while len(chosen) < jobs:
        following = heapq.heappop(queue) if queue else (math.inf, -1, None)
        while length <= following[0] and len(chosen) < jobs:
            chosen.append(worker)
            length += est
        heapq.heappush(queue, (length, order.index(worker), worker))
        length, _, worker = following
    return chosen


def test_lwl_keeps_feeding_a_cluster_while_its_work_is_at_most_the_nexts_as_eagle_does():
    assert lwl_policy({"jobs": 4, "est": 10, "queued_work": {"c0": 20, "c1": 20}}) == {
        "clusters": ["c0", "c1", "c1", "c0"]  # c1 at 30 ties with c0: it takes another
    }
    assert lwl(5, 4, {"c0": 0, "c1": 0, "c2": 5}) == ["c0", "c1", "c0", "c1", "c2"]  # the idle ones take one first
    assert lwl(3, 10, {"c0": 5}) == ["c0", "c0", "c0"]


@given(
    st.integers(min_value=0, max_value=30),
    st.integers(min_value=1, max_value=20),
    st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=6),
)
def test_lwl_places_as_eagles_find_workers_long_job_prio(jobs, est, work):
    queued_work = {f"c{i}": float(w) for i, w in enumerate(work)}
    assert lwl(jobs, est, queued_work) == eagle_lwl(jobs, est, queued_work)


# --- bad scenarios ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ({"campaigns": [{"name": "A", "jobs": -1, "est": 1}]}, "campaigns.0.jobs: must be >= 0"),
        ({"campaigns": [{"name": "A", "jobs": 1, "est": "x"}]}, "campaigns.0.est: must be a number"),
        ({"slots": -2, "campaigns": []}, "slots: must be >= 0"),
        ({"cap": "five", "campaigns": []}, "cap: must be a number"),
        ({"campaigns": {"A": {"est": 1, "remaining": 3}}, "queue": [{"campaign": "Z"}]}, "queue.0.campaign: unknown"),
        ({"campaigns": [{"name": "A", "jobs": 1, "est": 1}] * 2}, "campaigns.1.name: 'A' is there twice"),
        ({"campaigns": [{"name": "A", "jobs": 10**7, "est": 1}]}, "campaigns: at most 1,000,000 jobs"),
        ([], "scenario: must be an object"),
        ({"campaigns": {"A": {"est": 1, "remaining": -2}}, "queue": []}, "campaigns.A.remaining: must be >= -1"),
        ({"campaigns": {"A": {"est": 1}}, "queue": []}, "campaigns.A.remaining: missing"),
        ({"campaigns": {"A": {"est": 1, "remaining": 1}}, "queue": [{"campaign": "A", "delay": "x"}]}, "queue.0.delay"),
    ],
)
def test_a_bad_srpt_scenario_names_the_field(scenario, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        srpt(scenario)


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ({"jobs": -5, "est": 4, "queued_work": {}}, "jobs: must be >= 0"),
        ({"jobs": 1, "est": 4, "queued_work": {"c0": "busy"}}, "queued_work.c0: must be a number"),
        ({"jobs": 1, "est": 4, "queued_work": []}, "queued_work: must be an object"),
        ({"jobs": 1, "queued_work": {}}, "est: missing"),
        ({"jobs": 10**7, "est": 1, "queued_work": {"c0": 0}}, "jobs: at most 1,000,000"),
    ],
)
def test_a_bad_lwl_scenario_names_the_field(scenario, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        lwl_policy(scenario)


# --- the strategy -------------------------------------------------------------------------------------------


def campaign(cid, waiting, estimate=None, at=None, clusters=("c0",), slots_per_job=1, limit=10**6):
    return CampaignView(
        id=cid,
        type=CampaignType.DEFAULT,
        user="u",
        submitted_at=float(cid if at is None else at),
        waiting=waiting,
        demands={name: Demand(slots_per_job, limit) for name in clusters},
        estimate=estimate,
    )


def cluster(name="c0", free=0, queue=0, slots=100, jobs=(), queued=0):
    return ClusterView(name, free, queue, slots=slots, jobs=tuple(jobs), queued=queued)


def decide(campaigns, clusters, state=None, **options):
    strategy = metascheduler("srpt", options)
    decision = strategy.decide(Snapshot(1000.0, tuple(clusters), tuple(campaigns)), state or {})
    return {(a.cluster, a.campaign_id): a.jobs for a in decision.launches}, decision.state


def test_srpt_is_registered_with_its_evaluators():
    assert "srpt" in registry()
    assert evaluator("srpt") is srpt and evaluator("lwl") is lwl_policy


def test_free_slots_go_to_the_least_remaining_work_and_delay_those_bypassed():
    launched, state = decide([campaign(1, 100, 10), campaign(2, 5, 1)], [cluster(free=8)])
    assert launched == {("c0", 2): 5, ("c0", 1): 3}
    assert state == {"delays": {"1": 5.0}}


def test_a_campaign_at_its_cap_is_no_longer_bypassed():
    launched, state = decide([campaign(1, 100, 10), campaign(2, 5, 1)], [cluster(free=3)], {"delays": {"1": 50}})
    assert launched == {("c0", 1): 3}
    assert state == {"delays": {"1": 50.0}}


def test_a_batch_stops_where_the_cap_does():
    launched, state = decide([campaign(1, 100, 10), campaign(2, 20, 1)], [cluster(free=30)], {"delays": {"1": 47}})
    assert launched == {("c0", 2): 3, ("c0", 1): 27}
    assert state == {"delays": {"1": 50.0}}


def test_delays_of_campaigns_with_nothing_left_are_forgotten():
    launched, state = decide([campaign(2, 1, 1)], [cluster(free=3)], {"delays": {"1": 40, "2": 3}})
    assert launched == {("c0", 2): 1}
    assert state == {"delays": {}}


def test_a_cluster_keeps_feeding_the_short_campaign_it_runs():
    running = GridJob(job_id=1, campaign_id=1, slots=1, submitted_at=990.0, started_at=995.0)
    campaigns = [campaign(1, 50, 10), campaign(2, 5, 1)]
    assert decide(campaigns, [cluster(free=4, jobs=[running])])[0] == {("c0", 1): 4}
    assert decide(campaigns, [cluster(free=4)])[0] == {("c0", 2): 4}


def test_sticky_feeding_can_be_turned_off():
    running = GridJob(job_id=1, campaign_id=1, slots=1, submitted_at=990.0, started_at=995.0)
    campaigns = [campaign(1, 50, 10), campaign(2, 5, 1)]
    assert decide(campaigns, [cluster(free=4, jobs=[running])], sticky=False)[0] == {("c0", 2): 4}


def test_sticky_feeding_still_respects_the_cap_of_those_in_front():
    running = GridJob(job_id=1, campaign_id=2, slots=1, submitted_at=990.0, started_at=995.0)
    campaigns = [campaign(1, 50, 10), campaign(2, 500, 1)]
    launched, _ = decide(campaigns, [cluster(free=10, jobs=[running])], {"delays": {"1": 46}})
    assert launched == {("c0", 2): 4, ("c0", 1): 6}


def test_without_an_estimate_a_campaign_is_short_at_the_default_estimate():
    unknown, known = campaign(1, 10, None), campaign(2, 10, 100)  # known: 1,000 s of work left
    idle = [cluster(free=5, slots=5)]
    assert decide([unknown, known], idle, default_estimate=30, short_share=0)[0] == {("c0", 1): 5}
    assert decide([unknown, known], idle, default_estimate=200, short_share=0)[0] == {("c0", 2): 5}
    # short in order even when the default is above the cutoff
    assert decide([unknown, known], idle, default_estimate=700, short_share=0)[0] == {("c0", 2): 5}


def test_a_campaign_with_no_estimate_may_probe_the_short_share_with_one_job_only():
    """Issue 21, item 7: a campaign none of whose jobs has ended may be long. Taken for short, the long
    campaigns that arrive first took every slot of the short share, and short campaigns behind them waited for
    the first long jobs to end (long-first.yaml: 2,417 s short p90 under srpt). Until it has an estimate, a
    campaign holds the slots a long one may hold, or one probe job on a cluster where a long one may hold none:
    its end teaches the estimate, so that a short campaign arriving behind long ones starts at once and takes
    the share a pass or two later."""
    unknown = campaign(1, 50, None)
    # alone on an idle cluster: the long limit (9 of 10), the share left idle
    assert decide([unknown], [cluster(free=10, slots=10)])[0] == {("c0", 1): 9}
    assert decide([unknown], [cluster(free=20, slots=20)])[0] == {("c0", 1): 18}
    # long campaigns hold all but the share: one probe job, not the whole share
    held = [GridJob(i, 2, 1, 900.0, 900.0) for i in range(18)]
    busy = cluster(free=2, slots=20, jobs=held)
    assert decide([campaign(2, 50, 1000), unknown], [busy])[0] == {("c0", 1): 1}
    # the probe is there already: the share waits for an estimate, and a known short campaign takes it
    probing = cluster(free=1, slots=20, jobs=[*held, GridJob(30, 1, 1, 990.0, 995.0)])
    assert decide([campaign(2, 50, 1000), unknown], [probing])[0] == {}
    assert decide([campaign(2, 50, 1000), unknown, campaign(3, 5, 10)], [probing])[0] == {("c0", 3): 1}
    # once it has an estimate below the cutoff it is short: the whole share
    assert decide([campaign(2, 50, 1000), campaign(1, 50, 10)], [busy])[0] == {("c0", 1): 2}


def test_a_long_campaign_with_no_job_waiting_still_holds_long_slots():
    # campaign 1 (long) has every job placed: its 9 running jobs are long ones, so long campaign 2 may not
    # take the share's last slot
    held = [GridJob(i, 1, 1, 900.0, 900.0) for i in range(9)]
    full = cluster(free=1, slots=10, jobs=held)
    assert decide([campaign(1, 0, 1000), campaign(2, 50, 1000)], [full])[0] == {}
    # were they short ones, the share would be in use by short work, and the last slot long campaign 2's
    assert decide([campaign(1, 0, 10), campaign(2, 50, 1000)], [full])[0] == {("c0", 2): 1}


def test_a_job_running_past_the_cutoff_teaches_the_estimate_before_any_completes():
    # at snapshot time 1000, none of campaign 1's jobs has ended; one has run 900 s (> the 600 s cutoff)
    jobs = [GridJob(job_id=i, campaign_id=1, slots=1, submitted_at=0.0, started_at=100.0 + i) for i in range(3)]
    clusters = [cluster(free=7, slots=10, jobs=jobs)]
    # so it is long: it holds 3 slots and may hold 9 of 10 (the short share keeps one)
    assert decide([campaign(1, 50)], clusters)[0] == {("c0", 1): 6}
    # its jobs have run only 300 s: no estimate yet, it holds what a long campaign may, but short ones get the
    # share as soon as they come (its probe jobs are there already)
    young = [replace(job, started_at=700.0) for job in jobs]
    assert decide([campaign(1, 50)], [cluster(free=7, slots=10, jobs=young)])[0] == {("c0", 1): 6}
    assert decide([campaign(1, 50), campaign(2, 5, 10)], [cluster(free=7, slots=10, jobs=young)])[0] == {
        ("c0", 1): 6,
        ("c0", 2): 1,
    }
    # an oracle's estimate (standing on no ended job) is taken as it is
    assert decide([campaign(1, 50, 10)], clusters)[0] == {("c0", 1): 7}
    # a learned one counts the running jobs' time so far: 5 ended jobs of 10 s and 3 running for about 900 s
    # make (50 + ~2,700) / 8 > 300 s: short below a 400 s cutoff, long below a 300 s one
    learned = replace(campaign(1, 50, 10), confidence=5)
    assert decide([learned], clusters, cutoff=400)[0] == {("c0", 1): 7}
    assert decide([learned], clusters, cutoff=300)[0] == {("c0", 1): 6}


def stops(campaigns, clusters, **options):
    decision = metascheduler("srpt", options).decide(Snapshot(1000.0, tuple(clusters), tuple(campaigns)), {})
    return sorted((stop.cluster, stop.job_id) for stop in decision.stops)


def test_queued_long_jobs_are_taken_back_while_short_campaigns_wait_behind_them():
    # Eagle binds late: a long job does not sit in a queue that short jobs wait behind. Campaign 1 (long, 1,000
    # s jobs) runs 10 jobs and has 3 queued on a full cluster; short campaign 2 waits with 2 jobs
    running = [GridJob(i, 1, 1, submitted_at=0.0, started_at=10.0) for i in range(10)]
    queued = [GridJob(10 + i, 1, 1, submitted_at=100.0 + i) for i in range(3)]
    full = cluster(free=0, queue=0, slots=10, jobs=running + queued, queued=3)
    assert stops([campaign(1, 50, 1000), campaign(2, 2, 1)], [full]) == [("c0", 11), ("c0", 12)]
    # the newest queued first, no more than the short jobs waiting; running jobs are never stopped
    assert stops([campaign(1, 50, 1000), campaign(2, 9, 1)], [full]) == [("c0", 10), ("c0", 11), ("c0", 12)]
    # nothing short waits, or the short campaign cannot run there: nothing stopped
    assert stops([campaign(1, 50, 1000)], [full]) == []
    assert stops([campaign(1, 50, 1000), campaign(2, 2, 1, clusters=("c1",))], [full, cluster("c1")]) == []


def test_a_long_job_sent_to_a_free_slot_is_not_taken_back_before_it_starts():
    """Issue 21's churn: jobs sent to free slots wait for the RM's submission delay (10 s on small.yaml's
    alpha), and srpt took them back every pass (7,916 cancels for 3,250 jobs). Only the jobs waiting beyond the
    cluster's free slots are taken back, and no long job is queued where short ones still wait."""
    running = [GridJob(i, 1, 1, submitted_at=0.0, started_at=10.0) for i in range(7)]
    sent = [GridJob(10 + i, 1, 1, submitted_at=995.0) for i in range(3)]  # not started yet: the delay
    delayed = cluster(free=0, queue=0, slots=10, jobs=running + sent, queued=0)
    assert stops([campaign(1, 50, 1000), campaign(2, 2, 1)], [delayed]) == []
    assert stops([campaign(1, 50, 1000), campaign(2, 2, 1)], [replace(delayed, queued=1)]) == [("c0", 12)]
    short_waits = cluster(free=0, queue=5, slots=10, jobs=running, queued=0)
    placed, _ = decide([campaign(1, 50, 1000), campaign(2, 20, 1)], [short_waits])
    assert (short_waits.name, 1) not in placed, "no long job queued behind which short ones would wait"


def test_long_campaigns_stay_out_of_the_short_share():
    long = campaign(1, 100, 1000)
    assert decide([long], [cluster(free=20, slots=100)])[0] == {("c0", 1): 10}
    assert decide([long], [cluster(free=20, slots=100)], short_share=0)[0] == {("c0", 1): 20}
    held = [GridJob(i, 1, 1, 900.0, 900.0) for i in range(85)]
    assert decide([long], [cluster(free=15, slots=100, jobs=held)], lend=False)[0] == {("c0", 1): 5}
    assert decide([long], [cluster(free=0, queue=30, slots=100, jobs=held)])[0] == {("c0", 1): 5}


def test_by_default_and_no_short_work_around_the_share_goes_to_long_jobs_that_give_it_back_within_the_cutoff():
    """Issue 21: on long-first.yaml the share idled 8 of 80 slots for hours while no short campaign was
    there (300 long jobs against 300 short ones of 30 s), and srpt's long p90 was 8 % over fifo's. With
    ``lend``, while every campaign is known to be long, long ones may take all but one slot of each cluster
    where their running jobs free the rest of the share within the cutoff as they end: a campaign that comes
    starts at once on that slot, and once it (or one not known yet) is there, the share is kept again. It is
    srpt's default (its long p90 on long-first.yaml within 5 % of fifo's); ``lend: false`` keeps Eagle's
    static share."""
    long = campaign(1, 100, 1000)
    held = [GridJob(i, 1, 1, 900.0, 900.0) for i in range(85)]  # 85 jobs of 1,000 s free 9 slots in 106 s
    assert decide([long], [cluster(free=15, slots=100, jobs=held)])[0] == {("c0", 1): 14}, "lent by default"
    assert decide([long], [cluster(free=15, slots=100, jobs=held)], lend=False)[0] == {("c0", 1): 5}, "Eagle's"
    queue = cluster(free=0, queue=30, slots=100, jobs=held)  # lent free slots only: nothing long queued there
    assert decide([long], [queue], lend=True)[0] == {("c0", 1): 5}
    longer = campaign(1, 100, 100_000)  # they would take 10,600 s: the share is kept
    assert decide([longer], [cluster(free=15, slots=100, jobs=held)], lend=True)[0] == {("c0", 1): 5}
    assert decide([long], [cluster(free=20, slots=100)], lend=True)[0] == {("c0", 1): 10}, "none runs: kept"
    newcomer = campaign(2, 50, None)  # its first job's end tells whether it is short
    both = [long, newcomer]
    assert decide(both, [cluster(free=15, slots=100, jobs=held)], lend=True)[0] == {("c0", 1): 5, ("c0", 2): 1}
    many = [GridJob(i, 1, 1, 900.0, 900.0) for i in range(99)]
    assert decide(both, [cluster(free=1, slots=100, jobs=many)], lend=True)[0] == {("c0", 2): 1}


def test_a_long_campaign_at_the_head_goes_before_younger_short_ones():
    long, short = campaign(1, 100, 1000, at=0), campaign(2, 50, 1, at=5)
    assert decide([long, short], [cluster(free=20)])[0] == {("c0", 1): 10, ("c0", 2): 10}
    younger_long = campaign(1, 100, 1000, at=10)
    assert decide([younger_long, short], [cluster(free=20)])[0] == {("c0", 2): 20}


def test_long_campaigns_go_where_the_least_work_is_left():
    queued = [GridJob(i, 9, 1, 0.0) for i in range(30)]  # a campaign gone from the snapshot: default estimate
    long = campaign(1, 5, 1000, clusters=("c0", "c1"))
    clusters = [cluster("c0", free=10, slots=10, jobs=queued), cluster("c1", free=10, slots=10)]
    # c0 has 30 x 60 s / 10 slots = 180 s of work per slot; each long job adds 100 s per slot
    assert decide([long], clusters, short_share=0)[0] == {("c1", 1): 3, ("c0", 1): 2}


def test_the_queue_allowance_follows_the_same_order():
    short, other = campaign(1, 5, 1), campaign(2, 50, 10)
    assert decide([short, other], [cluster(free=2, queue=6)])[0] == {("c0", 1): 5, ("c0", 2): 3}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cutof": 600}, "metasched.srpt.cutof: no such option"),
        ({"cutoff": "long"}, "metasched.srpt.cutoff: must be a number"),
        ({"short_share": 1}, "metasched.srpt.short_share: must be below 1"),
        ({"short_share": -0.1}, "metasched.srpt.short_share: must be >= 0"),
        ({"cap": -1}, "metasched.srpt.cap: must be >= 0"),
        ({"default_estimate": 0}, "metasched.srpt.default_estimate: must be > 0"),
        ({"sticky": "yes"}, "metasched.srpt.sticky: must be true or false"),
        ({"lend": 2}, "metasched.srpt.lend: must be true or false"),
    ],
)
def test_bad_options_name_their_key(options, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        metascheduler("srpt", options)


def test_options_are_read():
    strategy = metascheduler("srpt", {"cutoff": 60, "short_share": 0.25, "cap": 2, "default_estimate": 9})
    assert (strategy.cutoff, strategy.short_share, strategy.cap, strategy.default_estimate) == (60, 0.25, 2, 9)
    assert (strategy.lend, metascheduler("srpt", {"lend": False}).lend) == (True, False)


# --- no starvation over many decisions ----------------------------------------------------------------------


def run_grid(options, passes=150, until=40):
    """Two clusters of 8 slots, one decision a second, every job lasting its campaign's estimate. At time 0
    an old short campaign A (40 jobs of 10 s) and a long one L (2 jobs of 100 s, over a cutoff of 50 s) wait;
    until ``until``, two small campaigns (8 jobs of 1 s, always the least remaining work) arrive every second:
    they alone fill the grid. Returns each campaign's wait (first start - arrival) and the jobs never launched."""
    strategy = metascheduler("srpt", {"cutoff": 50, **options})
    waiting, estimate, arrived, first = {1: 40, 2: 2}, {1: 10.0, 2: 100.0}, {1: 0.0, 2: 0.0}, {}
    running: list[tuple[str, int, float]] = []
    state: dict = {}
    for now in range(passes):
        if now < until:
            for cid in (100 + 2 * now, 101 + 2 * now):
                waiting[cid], estimate[cid], arrived[cid] = 8, 1.0, float(now)
        running = [job for job in running if now < job[2] + estimate[job[1]]]
        clusters = tuple(
            ClusterView(
                name,
                8 - sum(1 for job in running if job[0] == name),
                0,
                slots=8,
                jobs=tuple(GridJob(i, cid, 1, at, at) for i, (where, cid, at) in enumerate(running) if where == name),
            )
            for name in ("c0", "c1")
        )
        campaigns = tuple(
            CampaignView(
                cid,
                CampaignType.DEFAULT,
                "u",
                arrived[cid],
                left,
                {"c0": Demand(1, 99), "c1": Demand(1, 99)},
                estimate=estimate[cid],
            )
            for cid, left in waiting.items()
            if left > 0
        )
        decision = strategy.decide(Snapshot(float(now), clusters, campaigns), state)
        state = json.loads(json.dumps(decision.state))
        for launch in decision.launches:
            assert 0 < launch.jobs <= waiting[launch.campaign_id]
            waiting[launch.campaign_id] -= launch.jobs
            first.setdefault(launch.campaign_id, now - arrived[launch.campaign_id])
            running += [(launch.cluster, launch.campaign_id, float(now))] * launch.jobs
        assert len(running) <= 16
    return first, sum(waiting.values())


def test_every_campaign_is_served_under_a_stream_of_smaller_ones():
    for until in (40, 120, 300):
        waits, never = run_grid({}, passes=until + 100, until=until)
        assert never == 0
        assert waits[1] <= 5  # the cap: at most 50 s of bypassing jobs at 16 a second
        assert waits[2] <= 25  # L heads the queues once A's jobs are all out
        assert max(waits.values()) <= 40  # the same bound however long the stream lasts


def test_without_the_cap_the_stream_starves_the_old_campaigns():
    waits, _ = run_grid({"cap": float("inf")}, passes=220, until=120)
    assert waits[1] >= 120  # A waits as long as the stream lasts
    assert waits[2] >= 120  # and so does L, younger than A: it never heads a queue before


# --- help texts and properties ------------------------------------------------------------------------------


def examples(function):
    """The (input, output) pairs of the ``Example`` blocks of a ``grid policy`` help text."""
    lines = function.__doc__.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("Example"):
            j = next(k for k in range(i + 1, len(lines)) if lines[k].strip().startswith("->"))
            yield json.loads(" ".join(lines[i + 1 : j])), json.loads(lines[j].strip()[2:])


@pytest.mark.parametrize("name", ["srpt", "lwl"])
def test_the_help_examples_hold(name):
    pairs = list(examples(evaluator(name)))
    assert pairs
    for scenario, expected in pairs:
        assert evaluator(name)(scenario) == expected


@st.composite
def snapshots(draw):
    names = [f"c{i}" for i in range(draw(st.integers(1, 4)))]
    clusters = []
    for name in names:
        slots = draw(st.integers(0, 40))
        clusters.append(ClusterView(name, draw(st.integers(0, slots or 10)), draw(st.integers(0, 10)), slots=slots))
    campaigns = []
    for cid in range(draw(st.integers(0, 8))):
        usable = draw(st.lists(st.sampled_from(names), unique=True))
        campaigns.append(
            CampaignView(
                cid,
                CampaignType.DEFAULT,
                "u",
                float(draw(st.integers(0, 5))),
                draw(st.integers(0, 30)),
                {n: Demand(draw(st.integers(1, 4)), draw(st.integers(0, 30))) for n in usable},
                estimate=draw(st.none() | st.floats(0, 2000)),
            )
        )
    delays = {str(cid): draw(st.floats(0, 100)) for cid in range(len(campaigns))}
    return Snapshot(0.0, tuple(clusters), tuple(campaigns)), {"delays": delays}


@given(snapshots(), st.floats(0, 0.9), st.floats(0, 10), st.booleans(), st.booleans())
def test_a_decision_stays_within_budgets_demands_and_the_long_limit(shot_state, share, cap, sticky, lend):
    shot, state = shot_state
    options = {"short_share": share, "cap": cap, "cutoff": 600, "sticky": sticky, "lend": lend}
    strategy = metascheduler("srpt", options)
    decision = strategy.decide(shot, state)
    used = dict.fromkeys((c.name for c in shot.clusters), 0)
    long_used = dict(used)
    per_campaign = {}
    for launch in decision.launches:
        campaign = shot.campaign(launch.campaign_id)
        demand = campaign.demands[launch.cluster]
        assert 0 < launch.jobs <= demand.limit
        used[launch.cluster] += launch.jobs * demand.slots_per_job
        if campaign.estimate is not None and campaign.estimate > 600:
            long_used[launch.cluster] += launch.jobs * demand.slots_per_job
        per_campaign[campaign.id] = per_campaign.get(campaign.id, 0) + launch.jobs
    # the share: a tenth of the slots; lent but one while every campaign is known to be long, with lend
    lent = lend and all(c.estimate is not None and c.estimate > 600 for c in shot.campaigns)
    for c in shot.clusters:
        assert used[c.name] <= c.free + c.queue
        if c.slots:
            share_slots = int(share * c.slots)
            assert long_used[c.name] <= c.slots - (min(1, share_slots) if lent else share_slots)
    for c in shot.campaigns:
        assert per_campaign.get(c.id, 0) <= c.waiting
    json.dumps(decision.state)


@given(snapshots(), st.floats(0, 10))
def test_no_free_slot_is_left_that_a_short_campaign_could_use(shot_state, cap):
    shot, state = shot_state
    shot = Snapshot(shot.now, tuple(replace(c, queue=0) for c in shot.clusters), shot.campaigns)
    decision = metascheduler("srpt", {"cap": cap}).decide(shot, state)
    taken = {(a.cluster, a.campaign_id): a.jobs for a in decision.launches}
    left = {c.id: c.waiting - sum(n for (_, cid), n in taken.items() if cid == c.id) for c in shot.campaigns}
    for cluster in shot.clusters:
        mine = [(cid, n) for (name, cid), n in taken.items() if name == cluster.name]
        idle = cluster.free - sum(n * shot.campaign(cid).demands[cluster.name].slots_per_job for cid, n in mine)
        for c in shot.campaigns:
            demand = c.demands.get(cluster.name)
            if demand is None or c.estimate is None or c.estimate > 600:  # no estimate: long in what it holds
                continue
            assert left[c.id] == 0 or taken.get((cluster.name, c.id), 0) >= demand.limit or demand.slots_per_job > idle
