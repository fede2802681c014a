"""Guards of what a cluster's queue gets from a pass, on clusters under the test's hand (test_placement's fake
resource manager on a simulated clock): a stalled or stressed cluster gets its free slots and nothing queued,
whatever its flow strategy answers; a job nikita kills after waiting too long avoids that cluster for a while,
and the cluster's queue stays closed until one of cigri's jobs starts there. scripts/mutations.py holds the
mutations they catch."""

from __future__ import annotations

import pytest

from cigri import config, flow
from cigri.flow import Allowance
from cigri.model import JobState, RemoteState

from .test_placement import FakeRM, Grid


class Heedless:
    """A flow strategy that lets 3 slots wait whatever the reading says (stalled or not), from its second
    pass on (at its first, none)."""

    name = "heedless"

    def allow(self, reading, state):
        return Allowance(3 if state.get("seen") else 0), {"seen": True}


@pytest.fixture
def heedless(monkeypatch):
    monkeypatch.setattr("cigri.flow._REGISTRY", dict(flow._REGISTRY))
    flow.register(Heedless)


def sent(cluster: FakeRM) -> int:
    return len(cluster.owner)


# ---- a stalled cluster: its free slots, nothing queued ---------------------------------------------------------


def test_a_stressed_cluster_gets_its_free_slots_and_nothing_queued_whatever_its_flow_answers(heedless):
    a = FakeRM("a", 2, queue_depth=10)
    a.stressed = True  # its RM says it is under stress (as oar-rest's stress_factor does)
    grid = Grid(a)
    config.set_value(grid.store, "flow", "heedless")
    grid.submit(20)
    grid.at(0)
    for job_id in a.holds(RemoteState.PENDING):
        a.start(job_id, 5)
    a.slots = 4  # two more nodes come up: 2 free slots
    grid.at(10)
    assert sent(a) == 2 + 2, "the 2 free slots, none of the 3 slots the strategy would let wait"
    assert grid.cycle.ctx.allowed["a"] == 2 + 10, "nikita's threshold: its free slots and its queue_depth"


def test_a_cluster_whose_queued_jobs_do_not_start_gets_its_free_slots_and_nothing_queued(heedless):
    """Queued past the grace (60 s) without a start: stalled. Its free slots are still filled (a start there
    is what ends the stall), nothing more waits."""
    a = FakeRM("a", 2, queue_depth=10)
    grid = Grid(a)
    config.set_value(grid.store, "flow", "heedless")
    grid.submit(20)
    grid.at(0)
    assert sent(a) == 2, "the 2 free slots (the strategy lets none wait at its first pass)"
    grid.at(100)
    assert sent(a) == 2, "stalled: the 2 free slots already have their jobs, and nothing is queued"
    for job_id in a.holds(RemoteState.PENDING):
        a.start(job_id, 110)
    grid.at(120)
    assert sent(a) == 2 + 3, "a start ends the stall: the strategy's 3 may wait"


# ---- nikita's timeouts --------------------------------------------------------------------------------------


def timed_out() -> tuple[Grid, FakeRM, int]:
    """Cluster a, full of local users' jobs, queues jobs 1 and 2; b is full and queues nothing. The queue
    timeout is 100 s: at t=150 nikita kills both and returns them to the bag; then a's users leave."""
    a = FakeRM("a", 2, others=2, queue_depth=2)
    b = FakeRM("b", 1, others=1, queue_depth=0)
    grid = Grid(a, b)
    config.set_value(grid.store, "nikita.queue_timeout", 100)
    campaign_id = grid.submit(10)
    grid.at(0)
    assert a.holds(RemoteState.PENDING) == [1, 2]
    grid.at(150)
    assert sorted(a.cancelled) == [a.remote_of(1), a.remote_of(2)]
    assert grid.job(1).state == grid.job(2).state == JobState.TO_LAUNCH
    assert (grid.job(1).resubmits, grid.job(2).resubmits) == (0, 0), "a timeout is no attempt"
    a.others = 0
    return grid, a, campaign_id


def test_jobs_killed_for_waiting_too_long_are_not_sent_back_to_that_cluster_soon():
    grid, a, _ = timed_out()
    grid.at(160)
    assert a.holds(RemoteState.PENDING) == [3, 4], "its free slots go to other jobs; 1 and 2 avoid it"
    assert grid.job(1).state == grid.job(2).state == JobState.TO_LAUNCH


def test_after_a_timeout_the_clusters_queue_stays_closed_until_one_of_its_jobs_starts():
    grid, a, _ = timed_out()
    grid.at(160)
    assert len(a.holds(RemoteState.PENDING)) == 2, "its 2 free slots filled, nothing queued beyond them"
    for job_id in a.holds(RemoteState.PENDING):
        a.start(job_id, 165)
    grid.at(170)
    assert len(a.holds(RemoteState.PENDING)) == 2, "a start reopens its queue: 2 may wait again"
