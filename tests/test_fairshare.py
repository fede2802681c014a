"""fairshare: the most under-served user's campaigns first, this pass's launches counted as they are made."""

from __future__ import annotations

import heapq
import json

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
    TestFirstFifo,
    decide,
    evaluator,
    metascheduler,
)
from cigri.scheduling.fairshare import FairShare
from cigri.sim.run import jain


def campaign(cid, user, waiting, clusters=("a",), *, at=None, estimate=None, spj=1, limit=None, kind="default"):
    demands = {name: Demand(spj, waiting if limit is None else limit) for name in clusters}
    return CampaignView(
        cid, CampaignType(kind), user, float(cid if at is None else at), waiting, demands, estimate=estimate
    )


def snapshot(campaigns, clusters=None, usage=None, now=0.0):
    clusters = clusters or (ClusterView("a", free=10, queue=0),)
    return Snapshot(now, tuple(clusters), tuple(campaigns), dict(usage or {}))


def assert_refused(function, *arguments, message: str) -> None:
    """``function(*arguments)`` raises a one-line ConfigError starting with ``message``."""
    with pytest.raises(ConfigError) as error:
        function(*arguments)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def jobs_of(decision) -> dict[tuple[str, int], int]:
    placed: dict[tuple[str, int], int] = {}
    for launch in decision.launches:
        placed[launch.cluster, launch.campaign_id] = placed.get((launch.cluster, launch.campaign_id), 0) + launch.jobs
    return placed


def per_campaign(decision) -> dict[int, int]:
    totals: dict[int, int] = {}
    for launch in decision.launches:
        totals[launch.campaign_id] = totals.get(launch.campaign_id, 0) + launch.jobs
    return totals


def test_the_user_with_the_least_usage_goes_first_even_with_a_younger_campaign():
    snap = snapshot(
        [campaign(1, "alice", 5), campaign(2, "bob", 5)],
        clusters=[ClusterView("a", free=1, queue=0)],
        usage={"alice": 100.0, "bob": 0.0},
    )
    assert per_campaign(FairShare().decide(snap, {})) == {2: 1}
    assert per_campaign(TestFirstFifo().decide(snap, {})) == {1: 1}


def test_usage_is_weighed_by_shares():
    snap = snapshot(
        [campaign(1, "alice", 5), campaign(2, "bob", 5)],
        clusters=[ClusterView("a", free=1, queue=0)],
        usage={"alice": 300.0, "bob": 100.0},
    )
    assert per_campaign(FairShare(shares={"alice": 4}).decide(snap, {})) == {1: 1}  # 300/4 < 100/1
    assert per_campaign(FairShare(shares={"alice": 2}).decide(snap, {})) == {2: 1}  # 300/2 > 100/1


def test_unlisted_users_get_the_default_share():
    snap = snapshot(
        [campaign(1, "alice", 5), campaign(2, "bob", 5)],
        clusters=[ClusterView("a", free=1, queue=0)],
        usage={"alice": 300.0, "bob": 100.0},
    )
    assert per_campaign(FairShare(shares={"alice": 1}, default_share=4).decide(snap, {})) == {2: 1}


def test_a_pass_counts_its_own_launches_and_splits_by_shares():
    snap = snapshot([campaign(1, "alice", 50), campaign(2, "bob", 50)], clusters=[ClusterView("a", free=9, queue=0)])
    assert per_campaign(FairShare(shares={"alice": 2, "bob": 1}).decide(snap, {})) == {1: 6, 2: 3}
    assert per_campaign(FairShare().decide(snap, {})) == {1: 5, 2: 4}  # a tie goes to the older campaign


def test_launches_are_charged_at_the_campaign_estimate():
    snap = snapshot(
        [campaign(1, "alice", 50, estimate=100.0), campaign(2, "bob", 50, estimate=300.0)],
        clusters=[ClusterView("a", free=8, queue=0)],
    )
    assert per_campaign(FairShare().decide(snap, {})) == {1: 6, 2: 2}  # 600 slot-seconds each


def test_without_an_estimate_a_launch_is_charged_the_nominal_duration():
    snap = snapshot(
        [campaign(1, "alice", 50, estimate=100.0), campaign(2, "bob", 50)],
        clusters=[ClusterView("a", free=8, queue=0)],
    )
    assert per_campaign(FairShare(nominal_duration=400.0).decide(snap, {})) == {1: 6, 2: 2}
    assert per_campaign(FairShare(nominal_duration=100.0).decide(snap, {})) == {1: 4, 2: 4}


def test_slots_per_job_count_in_the_charge():
    snap = snapshot(
        [campaign(1, "alice", 50, estimate=100.0), campaign(2, "bob", 50, estimate=100.0, spj=3)],
        clusters=[ClusterView("a", free=12, queue=0)],
    )
    assert per_campaign(FairShare().decide(snap, {})) == {1: 6, 2: 2}  # 6 x 1 slot = 2 x 3 slots


def test_jobs_already_on_the_clusters_count_at_their_expected_cost():
    running = tuple(GridJob(10 + i, 2, 1, submitted_at=0.0, started_at=0.0) for i in range(3))
    snap = snapshot(
        [campaign(1, "alice", 50, estimate=100.0), campaign(2, "bob", 50, estimate=100.0)],
        clusters=[ClusterView("a", free=5, queue=0, jobs=running)],
    )
    assert per_campaign(FairShare().decide(snap, {})) == {1: 4, 2: 1}  # bob already holds 3 slots


def test_a_job_running_past_its_estimate_counts_what_it_has_used():
    running = (GridJob(10, 2, 2, submitted_at=0.0, started_at=100.0),)  # 2 slots for 500 s, estimate 100 s
    snap = snapshot(
        [campaign(1, "alice", 50, estimate=100.0), campaign(2, "bob", 50, estimate=100.0)],
        clusters=[ClusterView("a", free=12, queue=0, jobs=running)],
        now=600.0,
    )
    assert per_campaign(FairShare().decide(snap, {})) == {1: 11, 2: 1}  # bob's 1,000 slot-seconds first


def test_a_user_s_campaigns_go_oldest_first():
    snap = snapshot(
        [campaign(3, "alice", 2, at=5.0), campaign(4, "alice", 10, at=1.0), campaign(5, "bob", 0)],
        clusters=[ClusterView("a", free=4, queue=0)],
    )
    assert per_campaign(FairShare().decide(snap, {})) == {4: 4}


def test_free_slots_everywhere_before_any_queue_allowance():
    clusters = [ClusterView("a", free=0, queue=4), ClusterView("b", free=2, queue=0)]
    snap = snapshot([campaign(1, "alice", 3, ("a", "b"))], clusters=clusters)
    assert jobs_of(FairShare().decide(snap, {})) == {("b", 1): 2, ("a", 1): 1}


def test_the_queue_allowance_is_shared_in_the_same_spirit():
    snap = snapshot(
        [campaign(1, "alice", 50), campaign(2, "bob", 50)],
        clusters=[ClusterView("a", free=2, queue=4)],
        usage={"alice": 2 * 3600.0},
    )
    assert per_campaign(FairShare().decide(snap, {})) == {2: 4, 1: 2}


def test_limits_waiting_jobs_and_budgets_hold():
    snap = snapshot(
        [campaign(1, "alice", 50, limit=2), campaign(2, "bob", 1), campaign(3, "carol", 50, spj=4)],
        clusters=[ClusterView("a", free=10, queue=0)],
    )
    assert per_campaign(FairShare().decide(snap, {})) == {1: 2, 2: 1, 3: 1}  # 2 + 1 + 4 slots; 3 left over


def test_test_campaigns_still_go_first():
    snap = snapshot(
        [campaign(1, "alice", 5, kind="test", limit=1), campaign(2, "bob", 5)],
        clusters=[ClusterView("a", free=1, queue=0)],
        usage={"alice": 1e9},
    )
    assert per_campaign(decide(FairShare(), snap, {})) == {1: 1}


# ---- many passes: usage advanced by hand, shares reached ------------------------------------------------------


def simulate_passes(strategy, shares, durations, *, slots=12, passes=1500, period=10.0, half_life=3000.0, known=True):
    """A cluster of ``slots`` slots, one endless campaign per user (job duration ``durations[user]``), a pass
    every ``period`` s. A job's slot-seconds go into its user's decayed usage when it ends, as the cycle does.
    Returns each user's slot-seconds over the second half of the run."""
    users = sorted(shares)
    usage = dict.fromkeys(users, 0.0)
    ends: list[tuple[float, int, str]] = []  # (end time, job id, user)
    served = dict.fromkeys(users, 0.0)
    job_id = 0
    for step in range(passes):
        now = step * period
        for user in users:
            usage[user] *= 0.5 ** (period / half_life)
        while ends and ends[0][0] <= now:
            _, _, user = heapq.heappop(ends)
            usage[user] += durations[user]
        views = [
            campaign(i + 1, user, 10**6, estimate=durations[user] if known else None, at=float(i))
            for i, user in enumerate(users)
        ]
        running = tuple(
            GridJob(jid, users.index(user) + 1, 1, submitted_at=end - durations[user], started_at=end - durations[user])
            for end, jid, user in ends
        )
        cluster = ClusterView("a", free=slots - len(ends), queue=0, slots=slots, jobs=running)
        decision = strategy.decide(Snapshot(now, (cluster,), tuple(views), dict(usage)), {})
        for launch in decision.launches:
            user = users[launch.campaign_id - 1]
            for _ in range(launch.jobs):
                job_id += 1
                heapq.heappush(ends, (now + durations[user], job_id, user))
                if step >= passes // 2:
                    served[user] += durations[user]
    return served


def fairness(served, shares):
    return jain([served[user] / share for user, share in shares.items()])


@pytest.mark.parametrize("known", [True, False])
def test_users_usage_converges_to_their_shares_over_many_passes(known):
    shares = {"alice": 3, "bob": 1, "carol": 2}
    durations = {"alice": 50.0, "bob": 200.0, "carol": 120.0}
    served = simulate_passes(FairShare(shares=shares, nominal_duration=100.0), shares, durations, known=known)
    assert fairness(served, shares) >= 0.95
    assert fairness(simulate_passes(TestFirstFifo(), shares, durations, known=known), shares) < 0.5


# ---- options -----------------------------------------------------------------------------------------------------


def test_configure_builds_the_strategy_from_its_options():
    strategy = metascheduler(
        "fairshare", {"shares": {"alice": 2}, "default_share": 0.5, "half_life": 3600, "nominal_duration": 60}
    )
    assert isinstance(strategy, FairShare)
    assert strategy.share("alice") == 2
    assert strategy.share("bob") == 0.5
    assert strategy.half_life == 3600
    assert strategy.nominal_duration == 60
    default = metascheduler("fairshare")
    assert (default.share("x"), default.half_life, default.nominal_duration) == (1, 604800, 3600)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"share": {}}, "metasched.fairshare.share: unknown option"),
        ({"shares": [1]}, "metasched.fairshare.shares: must be an object"),
        ({"shares": {"alice": 0}}, "metasched.fairshare.shares.alice: must be > 0"),
        ({"shares": {"alice": "x"}}, "metasched.fairshare.shares.alice: must be a number"),
        ({"default_share": -1}, "metasched.fairshare.default_share: must be > 0"),
        ({"half_life": 0}, "metasched.fairshare.half_life: must be > 0"),
        ({"half_life": True}, "metasched.fairshare.half_life: must be a number"),
        ({"nominal_duration": "1h"}, "metasched.fairshare.nominal_duration: must be a number"),
    ],
)
def test_bad_options_are_refused_naming_the_key(options, message):
    assert_refused(metascheduler, "fairshare", options, message=message)


# ---- grid policy fairshare ---------------------------------------------------------------------------------------


def test_the_evaluator_shares_one_cluster_s_slots():
    scenario = {
        "slots": 10,
        "shares": {"alice": 2, "bob": 1},
        "usage": {"alice": 3600, "bob": 0},
        "campaigns": [{"id": 1, "user": "alice", "waiting": 20}, {"id": 2, "user": "bob", "waiting": 20}],
    }
    assert evaluator("fairshare")(scenario) == {"launches": {"1": 6, "2": 4}}


def test_the_evaluator_reads_estimates_running_jobs_limits_and_the_queue():
    scenario = {
        "slots": 4,
        "queue": 2,
        "nominal_duration": 100,
        "campaigns": [
            {"id": 7, "user": "alice", "waiting": 20, "estimate": 100, "running": 1},
            {"id": 8, "user": "bob", "waiting": 20, "max_jobs": 2},
            {"id": 9, "user": "carol", "waiting": 20, "slots_per_job": 2, "estimate": 50},
        ],
    }
    assert evaluator("fairshare")(scenario) == {"launches": {"7": 2, "8": 2, "9": 1}}


def assert_help_example(policy: str) -> None:
    """The ``Example: INPUT gives OUTPUT.`` of the policy's evaluator docstring (its ``grid policy`` help)
    is what the evaluator does."""
    text = " ".join(evaluator(policy).__doc__.split())
    scenario, result = text.split("Example: ", 1)[1].split(" gives ")
    assert evaluator(policy)(json.loads(scenario)) == json.loads(result.rstrip("."))


def test_the_help_s_example_is_what_the_evaluator_does():
    assert_help_example("fairshare")


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ({"campaigns": []}, "slots: missing"),
        ({"slots": -1, "campaigns": []}, "slots: must be >= 0"),
        ({"slots": 1}, "campaigns: missing"),
        ({"slots": 1, "campaigns": [{"id": 1, "waiting": 1}]}, "campaigns[0].user: missing"),
        ({"slots": 1, "campaigns": [{"id": 1, "user": "a", "waiting": -2}]}, "campaigns[0].waiting: must be >= 0"),
        (
            {"slots": 1, "campaigns": [{"id": 1, "user": "a", "waiting": 1, "slots_per_job": 0}]},
            "campaigns[0].slots_per_job",
        ),
        (
            {"slots": 1, "campaigns": [{"id": 1, "user": "a", "waiting": 1}, {"id": 1, "user": "b", "waiting": 1}]},
            "campaigns[1].id: duplicate 1",
        ),
        ({"slots": 1, "usage": {"a": "much"}, "campaigns": []}, "usage.a: must be a number"),
        ({"slots": 1, "shares": {"a": -1}, "campaigns": []}, "shares.a: must be > 0"),
        ({"slots": 1, "campaign": [], "campaigns": []}, "campaign: unknown key"),
    ],
)
def test_a_bad_scenario_is_one_line_naming_the_field(scenario, message):
    assert_refused(evaluator("fairshare"), scenario, message=message)


# ---- properties --------------------------------------------------------------------------------------------------

users = st.sampled_from(["alice", "bob", "carol"])


@st.composite
def snapshots(draw, clusters: str = "abc", max_slots_per_job: int = 4) -> Snapshot:
    """Up to 6 campaigns of 3 users on some of ``clusters`` (each a demand: slots per job, limit, failed jobs),
    half of them with an estimate; each cluster's free slots and queue allowance; whole users' usage."""
    demand = st.tuples(st.integers(1, max_slots_per_job), st.integers(0, 30), st.integers(0, 30))
    specs = draw(
        st.lists(
            st.tuples(users, st.integers(0, 30), st.dictionaries(st.sampled_from(clusters), demand, min_size=1)),
            max_size=6,
        )
    )
    campaigns = [
        CampaignView(
            i + 1,
            CampaignType.DEFAULT,
            user,
            float(i),
            waiting,
            {name: Demand(spj, limit, min(failed, waiting)) for name, (spj, limit, failed) in demands.items()},
            estimate=None if i % 2 else 10.0 * (i + 1),
        )
        for i, (user, waiting, demands) in enumerate(specs)
    ]
    views = [ClusterView(name, draw(st.integers(0, 40)), draw(st.integers(0, 10))) for name in clusters]
    usage = draw(st.dictionaries(users, st.integers(0, 10**5).map(float)))
    return Snapshot(0.0, tuple(views), tuple(campaigns), usage)


def check_bounds(snap, decision):
    """No cluster spends more than its free slots plus queue allowance, no campaign more than its waiting jobs,
    no (cluster, campaign) more than the demand's limit."""
    placed = jobs_of(decision)
    for cluster in snap.clusters:
        spent = sum(
            n * snap.campaign(cid).demands[name].slots_per_job
            for (name, cid), n in placed.items()
            if name == cluster.name
        )
        assert spent <= cluster.free + cluster.queue
    for view in snap.campaigns:
        assert sum(n for (_, cid), n in placed.items() if cid == view.id) <= view.waiting
        for name, demand in view.demands.items():
            assert placed.get((name, view.id), 0) <= demand.limit
    assert all(name in snap.campaign(cid).demands for name, cid in placed)


@given(snapshots(), st.dictionaries(users, st.integers(1, 5)))
def test_never_more_than_budgets_waiting_jobs_or_limits(snap, shares):
    check_bounds(snap, FairShare(shares=shares).decide(snap, {}))


@given(snapshots("a", max_slots_per_job=1))
def test_one_cluster_of_single_slot_jobs_is_filled_as_far_as_demand_goes(snap):
    wanted = sum(min(c.waiting, c.demands["a"].limit) for c in snap.campaigns)
    budget = snap.clusters[0].free + snap.clusters[0].queue
    assert sum(per_campaign(FairShare().decide(snap, {})).values()) == min(budget, wanted)


def one_job_at_a_time(strategy: FairShare, snap: Snapshot) -> dict[tuple[str, int], int]:
    """The rule as stated: each job to the usable campaign of the lowest (charge / share, age), then charged."""
    charges = strategy.charges(snap)
    waiting = {c.id: c.waiting for c in snap.campaigns}
    taken: dict[tuple[str, int], int] = {}
    for kind in ("free", "queue"):
        for cluster in snap.clusters:
            budget = getattr(cluster, kind)
            while True:
                usable = [
                    c
                    for c in snap.campaigns
                    if (demand := c.demands.get(cluster.name))
                    and waiting[c.id] > 0
                    and taken.get((cluster.name, c.id), 0) < demand.limit
                    and demand.slots_per_job <= budget
                ]
                if not usable:
                    break
                chosen = min(usable, key=lambda c: (charges[c.user] / strategy.share(c.user), c.submitted_at, c.id))
                spj = chosen.demands[cluster.name].slots_per_job
                taken[cluster.name, chosen.id] = taken.get((cluster.name, chosen.id), 0) + 1
                waiting[chosen.id] -= 1
                budget -= spj
                charges[chosen.user] += strategy.cost(chosen, spj)
    return taken


@given(snapshots(), st.dictionaries(users, st.integers(1, 5)))
def test_handing_out_jobs_in_chunks_gives_what_one_job_at_a_time_gives(snap, shares):
    strategy = FairShare(shares=shares, nominal_duration=60.0)
    assert strategy.plan(snap) == one_job_at_a_time(strategy, snap)
