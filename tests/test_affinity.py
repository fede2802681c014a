"""affinity (CiGri's 2009 design): home campaigns first on their users' home clusters, the others take what
is left; a job that failed on a cluster takes it only when nothing else wants it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cigri.model import CampaignType
from cigri.scheduling import (
    CampaignView,
    ClusterView,
    Demand,
    Snapshot,
    TestFirstFifo,
    decide,
    evaluator,
    metascheduler,
)
from cigri.scheduling.affinity import Affinity

from .test_fairshare import assert_help_example, assert_refused, check_bounds, jobs_of, snapshots


def campaign(cid, user, waiting, clusters=("a", "b"), *, limit=None, failed=None, spj=1, kind="default"):
    failed = failed or {}
    demands = {name: Demand(spj, waiting if limit is None else limit, failed.get(name, 0)) for name in clusters}
    return CampaignView(cid, CampaignType(kind), user, float(cid), waiting, demands)


def snapshot(campaigns, **budgets):
    """Clusters named by keyword, in that order: ``a=4`` (free slots) or ``a=(free, queue)``."""
    clusters = [
        ClusterView(name, *(budget if isinstance(budget, tuple) else (budget, 0))) for name, budget in budgets.items()
    ]
    return Snapshot(0.0, tuple(clusters), tuple(campaigns))


def test_the_2009_design_s_example_comes_out_in_its_order():
    """The seed's note (Bzizou, 20 May 2009): campaign1 has an affinity with cluster1, campaign2 with both,
    campaign3 with none; the metascheduler launches campaign1 on cluster1, campaign2 on cluster1 and cluster2,
    campaign1 on cluster2, then campaign3 on cluster1 and cluster2."""
    strategy = Affinity({"u1": ["cluster1"], "u2": ["cluster1", "cluster2"]})
    snap = snapshot(
        [
            campaign(1, "u1", 6, ("cluster1", "cluster2"), limit=4),
            campaign(2, "u2", 4, ("cluster1", "cluster2"), limit=2),
            campaign(3, "u3", 10, ("cluster1", "cluster2")),
        ],
        cluster1=7,
        cluster2=8,
    )
    assert [(launch.campaign_id, launch.cluster, launch.jobs) for launch in strategy.decide(snap, {}).launches] == [
        (1, "cluster1", 4),
        (2, "cluster1", 2),
        (2, "cluster2", 2),
        (1, "cluster2", 2),
        (3, "cluster1", 1),
        (3, "cluster2", 4),
    ]


def test_a_home_campaign_goes_before_an_older_one_on_its_home_cluster():
    snap = snapshot([campaign(1, "carol", 10), campaign(2, "alice", 3)], a=4, b=4)
    assert jobs_of(Affinity({"alice": ["a"]}).decide(snap, {})) == {("a", 2): 3, ("a", 1): 1, ("b", 1): 4}
    assert jobs_of(TestFirstFifo().decide(snap, {})) == {("a", 1): 4, ("b", 1): 4}


def test_home_clusters_are_taken_in_the_user_s_order_of_preference():
    snap = snapshot([campaign(1, "alice", 3)], a=5, b=2)
    assert jobs_of(Affinity({"alice": ["b", "a"]}).decide(snap, {})) == {("b", 1): 2, ("a", 1): 1}
    assert jobs_of(Affinity({"alice": ["a", "b"]}).decide(snap, {})) == {("a", 1): 3}


def test_without_affinities_campaigns_go_oldest_first():
    snap = snapshot([campaign(2, "bob", 5), campaign(1, "alice", 5)], a=3, b=3)
    assert jobs_of(Affinity({}).decide(snap, {})) == {("a", 1): 3, ("b", 1): 2, ("b", 2): 1}


def test_jobs_that_failed_on_a_home_cluster_are_not_home_demand_there():
    snap = snapshot([campaign(1, "alice", 5, failed={"a": 3})], a=10, b=10)
    assert jobs_of(Affinity({"alice": ["a"]}).decide(snap, {})) == {("a", 1): 2, ("b", 1): 3}


def test_jobs_that_failed_on_the_only_cluster_still_take_it_as_leftovers():
    snap = snapshot([campaign(1, "alice", 5, ("a",), failed={"a": 3})], a=10)
    assert jobs_of(Affinity({"alice": ["a"]}).decide(snap, {})) == {("a", 1): 5}


def test_jobs_that_failed_on_a_cluster_take_it_after_every_other_campaign():
    snap = snapshot([campaign(1, "alice", 4, ("a",), failed={"a": 4}), campaign(2, "carol", 4, ("a",))], a=6)
    assert jobs_of(Affinity({"alice": ["a"]}).decide(snap, {})) == {("a", 2): 4, ("a", 1): 2}


def test_jobs_that_failed_on_a_cluster_go_to_other_clusters_first():
    snap = snapshot([campaign(1, "carol", 4, failed={"a": 2})], a=4, b=1)
    assert jobs_of(Affinity({}).decide(snap, {})) == {("a", 1): 3, ("b", 1): 1}
    assert jobs_of(TestFirstFifo().decide(snap, {})) == {("a", 1): 4}


def test_free_slots_everywhere_before_any_queue_allowance():
    snap = snapshot([campaign(1, "alice", 4)], a=(0, 5), b=3)
    assert jobs_of(Affinity({"alice": ["a"]}).decide(snap, {})) == {("b", 1): 3, ("a", 1): 1}


def test_slots_per_job_and_limits_hold():
    snap = snapshot([campaign(1, "alice", 9, ("a",), spj=2, limit=3), campaign(2, "bob", 9, ("a",), spj=3)], a=11)
    assert jobs_of(Affinity({"alice": ["a"]}).decide(snap, {})) == {("a", 1): 3, ("a", 2): 1}


def test_test_campaigns_still_go_first():
    snap = snapshot([campaign(1, "alice", 4), campaign(2, "bob", 5, ("a",), limit=1, kind="test")], a=1, b=0)
    assert jobs_of(decide(Affinity({"alice": ["a"]}), snap, {})) == {("a", 2): 1}


# ---- options -----------------------------------------------------------------------------------------------------


def test_configure_builds_the_strategy_from_its_options():
    strategy = metascheduler("affinity", {"affinities": {"alice": ["b", "a"], "bob": []}})
    assert isinstance(strategy, Affinity)
    assert strategy.affinities == {"alice": ("b", "a"), "bob": ()}
    assert metascheduler("affinity").affinities == {}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"affinity": {}}, "metasched.affinity.affinity: unknown option"),
        ({"affinities": ["a"]}, "metasched.affinity.affinities: must be an object"),
        ({"affinities": {"alice": "a"}}, "metasched.affinity.affinities.alice: must be a list"),
        ({"affinities": {"alice": ["a", 3]}}, "metasched.affinity.affinities.alice[1]: must be a cluster name"),
        ({"affinities": {"alice": ["a", ""]}}, "metasched.affinity.affinities.alice[1]: must be a cluster name"),
        ({"affinities": {"alice": ["a", "a"]}}, "metasched.affinity.affinities.alice[1]: 'a' is listed twice"),
    ],
)
def test_bad_options_are_refused_naming_the_key(options, message):
    assert_refused(metascheduler, "affinity", options, message=message)


# ---- grid policy affinity ----------------------------------------------------------------------------------------


def test_the_evaluator_places_campaigns_by_affinity():
    scenario = {
        "clusters": {"lyon": {"free": 4}, "grenoble": {"free": 2, "queue": 2}},
        "affinities": {"alice": ["lyon"], "bob": ["grenoble"]},
        "campaigns": [
            {"id": 1, "user": "carol", "waiting": 3},
            {"id": 2, "user": "alice", "waiting": 3, "failed": {"lyon": 1}},
            {"id": 3, "user": "bob", "waiting": 1, "clusters": ["grenoble"]},
        ],
    }
    assert evaluator("affinity")(scenario) == {
        "launches": {"lyon": {"2": 2, "1": 2}, "grenoble": {"3": 1, "1": 1, "2": 1}}
    }


def test_the_help_s_example_is_what_the_evaluator_does():
    assert_help_example("affinity")


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ({"campaigns": []}, "clusters: missing"),
        ({"clusters": {"a": {"free": -1}}, "campaigns": []}, "clusters.a.free: must be >= 0"),
        ({"clusters": {"a": {"fre": 1}}, "campaigns": []}, "clusters.a.fre: unknown key"),
        ({"clusters": {"a": {}}, "affinities": {"x": "a"}, "campaigns": []}, "affinities.x: must be a list"),
        (
            {"clusters": {"a": {}}, "campaigns": [{"id": 1, "user": "u", "waiting": 1, "clusters": ["b"]}]},
            "campaigns[0].clusters[0]: unknown cluster 'b'",
        ),
        (
            {"clusters": {"a": {}}, "campaigns": [{"id": 1, "user": "u", "waiting": 1, "failed": {"b": 1}}]},
            "campaigns[0].failed.b: not one of the campaign's clusters",
        ),
        (
            {"clusters": {"a": {}}, "campaigns": [{"id": 1, "user": "u", "waiting": 1, "failed": {"a": 2}}]},
            "campaigns[0].failed.a: must be <= waiting (1), got 2",
        ),
        (
            {
                "clusters": {"a": {}},
                "campaigns": [{"id": 1, "user": "u", "waiting": 1}, {"id": 1, "user": "v", "waiting": 1}],
            },
            "campaigns[1].id: duplicate 1",
        ),
    ],
)
def test_a_bad_scenario_is_one_line_naming_the_field(scenario, message):
    assert_refused(evaluator("affinity"), scenario, message=message)


# ---- properties --------------------------------------------------------------------------------------------------

affinities = st.dictionaries(st.sampled_from(["alice", "bob", "carol"]), st.lists(st.sampled_from("abcd"), unique=True))


@given(snapshots(), affinities)
def test_never_more_than_budgets_waiting_jobs_or_limits(snap, homes):
    check_bounds(snap, Affinity(homes).decide(snap, {}))


@given(snapshots("a", max_slots_per_job=1), affinities)
def test_on_one_cluster_of_single_slot_jobs_as_many_jobs_go_as_under_fifo(snap, homes):
    """Home, foreign and failed levels change who goes first, never how many go."""
    placed = sum(launch.jobs for launch in Affinity(homes).decide(snap, {}).launches)
    assert placed == sum(launch.jobs for launch in TestFirstFifo().decide(snap, {}).launches)
