"""Guards of what runs again, and where, an audit found unpinned (each fails when its rule is removed), on
clusters under the test's hand (test_placement's fake resource manager on a simulated clock; test_locality_cycle's
with a cache): an exit-67 job waits while a fresh job of its campaign waits for another cluster, in campaigns with
input files too; only a walltime kill of a signal-checkpointing job is a checkpoint. scripts/mutations.py holds
the mutations they catch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from cigri import campaigns as ops
from cigri.jdl import parse
from cigri.model import JobSpec, JobState, KillCause, RemoteState, RemoteStatus

from .test_locality_cycle import CachingRM
from .test_locality_cycle import submit as submit_with_files
from .test_placement import FakeRM, Grid


class Recording(FakeRM):
    """A fake cluster that keeps every job description it was handed (what the job's environment says) and can
    say why it killed a job."""

    def __init__(self, name: str, slots: int, **kw):
        super().__init__(name, slots, **kw)
        self.specs: list[JobSpec] = []

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        self.specs += specs
        return super().submit(batch_key, specs)

    def killed(self, job_id: int, at: float, cause: KillCause) -> None:
        remote = self.remote_of(job_id)
        status = self.jobs[remote]
        self.jobs[remote] = replace(status, state=RemoteState.KILLED, ended_at=at, reason=cause.value, cause=cause)


def exits_67_while_job_2_avoids_a(grid: Grid, a: FakeRM) -> None:
    """Jobs 1 and 2 run on a; at t=10 job 1 exits 67 (run me again once the others have run) and an
    administrator kills job 2 (it avoids a for a while): at the pass of t=11, a has two free slots."""
    grid.at(0)
    assert a.holds(RemoteState.PENDING) == [1, 2]
    a.start(1, 1)
    a.start(2, 1)
    a.end(1, 10, exit_code=67)
    a.kill(2, 10)
    a.jobs[a.remote_of(2)] = replace(a.jobs[a.remote_of(2)], cause=KillCause.ADMIN)
    grid.at(11)
    assert (grid.job(1).state, grid.job(2).state) == (JobState.TO_LAUNCH, JobState.TO_LAUNCH)


def test_an_exit_67_job_waits_while_a_fresh_one_waits_for_another_cluster():
    """Job 2 waits for b (full), so job 1 (exit 67) is not yet the campaign's last: a's free slots stay free.
    Once job 2 has gone to b, job 1 goes to a."""
    a, b = FakeRM("a", 2, queue_depth=0), FakeRM("b", 1, others=1, queue_depth=0)
    grid = Grid(a, b)
    grid.submit(2)
    exits_67_while_job_2_avoids_a(grid, a)
    assert a.holds(RemoteState.PENDING) == [], "job 1 waits for job 2, which avoids a"
    b.others = 0
    grid.at(20)
    assert b.holds(RemoteState.PENDING) == [2]
    grid.at(30)
    assert a.holds(RemoteState.PENDING) == [1], "no fresh job waits any more: job 1 runs again"


def test_in_a_campaign_with_input_files_an_exit_67_job_goes_after_the_fresh_ones(tmp_path: Path):
    a, b = CachingRM("a", 2), CachingRM("b", 1)
    b.others = 1
    grid = Grid(a, b)
    submit_with_files(grid, tmp_path, ["j1 f1", "j2 f1", "j3 f1"])
    grid.at(0)
    assert a.holds(RemoteState.PENDING) == [1, 2]
    a.start(1, 1)
    a.start(2, 1)
    a.end(1, 10, exit_code=67)
    grid.at(11)
    assert a.holds(RemoteState.PENDING) == [3], "the fresh job 3 first, not job 1 (exit 67)"
    assert grid.job(1).state == JobState.TO_LAUNCH
    a.end(2, 20, started=1)
    grid.at(21)
    assert a.holds(RemoteState.PENDING) == [1, 3], "then job 1, the campaign's last"


def signal_checkpointing(grid: Grid) -> int:
    jdl = parse(
        {
            "name": "c",
            "exec_file": "run",
            "walltime": 600,
            "checkpointing_type": "signal",
            "clusters": {name: {} for name in grid.clusters},
            "params": ["j1", "j2"],
        }
    )
    return ops.submit(grid.store, jdl, grid.clock, user="alice", adapters=grid.clusters.__getitem__)[0]


def test_only_a_walltime_kill_of_a_signal_checkpointing_job_is_a_checkpoint():
    """Killed at its walltime, a signal-checkpointing job had its signal a grace before: it resumes there from
    its checkpoint (CIGRI_RESUME), no attempt spent. Killed by an administrator, it had no signal, so no
    checkpoint: it starts over, an attempt spent."""
    a = Recording("a", 2, queue_depth=0)
    grid = Grid(a)
    signal_checkpointing(grid)
    grid.at(0)
    a.start(1, 1)
    a.start(2, 1)
    a.killed(1, 601, KillCause.WALLTIME)
    a.killed(2, 300, KillCause.ADMIN)
    grid.at(602)
    resumed, again = grid.job(1), grid.job(2)
    assert (resumed.resumes, resumed.resubmits, resumed.checkpoint_cluster) == (1, 0, "a")
    assert (again.resumes, again.resubmits, again.checkpoint_cluster) == (0, 1, None)
    relaunched = {spec.job_id: spec for spec in a.specs[2:]}
    assert set(relaunched) == {1, 2}
    assert (relaunched[1].resume, relaunched[2].resume) == (True, False), "the job is told to resume (CIGRI_RESUME)"


def test_a_job_killed_without_a_cause_is_no_checkpoint_either():
    a = Recording("a", 1, queue_depth=0)
    grid = Grid(a)
    signal_checkpointing(grid)
    grid.at(0)
    a.start(1, 1)
    a.jobs[a.remote_of(1)] = RemoteStatus(a.remote_of(1), RemoteState.KILLED, None, 1, 50, "node failure")
    grid.at(60)
    job = grid.job(1)
    assert (job.resumes, job.checkpoint_cluster) == (0, None)
