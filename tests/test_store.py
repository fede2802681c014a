"""The state file: creation, migrations, and the counts the trigger keeps."""

from __future__ import annotations

import stat
import subprocess
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from cigri.cycle.metasched import _slowness
from cigri.model import CampaignState, CampaignType, JobState
from cigri.scheduling import CampaignView, Record, slowness
from cigri.store import Store, default_state_path
from cigri.store.migrations import MIGRATIONS

from .conftest import PYTHON


def test_new_state_is_private_migrated_and_wal(tmp_path):
    path = tmp_path / "deep" / "state.db"
    store = Store(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.applied == [name for name, _ in MIGRATIONS]
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    again = Store(path)
    assert again.applied == []  # recorded, not applied twice
    assert [r[0] for r in again.conn.execute("SELECT name FROM _migrations")] == [n for n, _ in MIGRATIONS]
    again.close()


def test_default_path_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("CIGRI_STATE", str(tmp_path / "x.db"))
    assert default_state_path() == tmp_path / "x.db"
    monkeypatch.delenv("CIGRI_STATE")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert default_state_path() == tmp_path / ".local" / "share" / "cigri" / "state.db"


def test_a_failed_transaction_writes_nothing(tmp_path):
    store = Store(tmp_path / "s.db")
    try:
        with store.transaction():
            cid = store.create_campaign("c", "u", CampaignType.DEFAULT, {}, {"local": {}}, 0.0)
            store.add_jobs(cid, [(["a"], ["a"])])
            raise RuntimeError("interrupted")
    except RuntimeError:
        pass
    assert store.campaigns() == [] and store.db["jobs"].count == 0


def test_an_in_memory_state_is_a_private_memdb_database_that_rolls_back():
    """The simulator's state: a database of SQLite's memdb VFS (the legacy ``:memory:`` keeps every page of the
    database dirty, and each commit walks them all: the updator's commits cost 25 times more at the grid
    week's 1.6M jobs), private to its Store, whose failed transactions still write nothing."""
    first, second = Store(":memory:"), Store(":memory:")
    name = first.conn.execute("PRAGMA database_list").fetchone()[2]
    assert name.startswith("/cigri-") and name != second.conn.execute("PRAGMA database_list").fetchone()[2]
    assert first.conn.execute("PRAGMA journal_mode").fetchone()[0] == "memory"
    first.create_campaign("c", "u", CampaignType.DEFAULT, {}, {"local": {}}, 0.0)
    assert second.campaigns() == []  # not shared, though the VFS is the process's
    try:
        with first.transaction():
            first.add_jobs(first.campaigns()[0].id, [(["a"], ["a"])])
            raise RuntimeError("interrupted")
    except RuntimeError:
        pass
    assert first.db["jobs"].count == 0
    first.close()
    again = Store(":memory:")
    assert again.campaigns() == []  # a closed one is gone
    again.close()
    second.close()


STATES = [s for s in JobState]


@settings(max_examples=40)
@given(st.lists(st.tuples(st.integers(0, 19), st.sampled_from(STATES)), max_size=60))
def test_counts_always_match_the_jobs(moves):
    store = Store(":memory:")
    with store.transaction():
        cid = store.create_campaign("c", "u", CampaignType.DEFAULT, {}, {"local": {}}, 0.0)
        store.add_jobs(cid, [([f"j{i}" for i in range(20)],) * 2])
    ids = [row["id"] for row in store.db["jobs"].rows_where(order_by="id", select="id")]
    with store.transaction():
        for index, state in moves:
            store.set_job_state([ids[index]], state)
    real = {row["state"]: row["n"] for row in store.db.query("SELECT state, count(*) AS n FROM jobs GROUP BY state")}
    counted = {s.value: n for s, n in store.counts(cid).items() if n}
    assert counted == real
    store.close()


def test_hypothesis_has_no_wall_clock_deadline():
    """A slow or busy machine makes examples slow, not wrong: conftest turns hypothesis' deadline off."""
    assert settings().deadline is None


def test_a_second_store_on_the_same_file_leaves_the_first_ones_wal_index(state):
    """Opening the state again in this process must not drop the locks SQLite holds for the first connection:
    else another process closing its connection believes itself the last and deletes the WAL index."""
    first = Store(state)
    first.campaigns()
    Store(state).close()
    closing = "import sys; from cigri.store import Store; Store(sys.argv[1]).close()"
    subprocess.run([PYTHON, "-c", closing, str(state)], check=True)
    assert state.with_name("state.db-shm").exists()
    assert first.campaigns() == []
    first.close()


def test_grid_counts_and_launching_count_of_a_cluster():
    """Per campaign, its jobs queued and running on the cluster (launching ones left out), the campaigns
    without a running job first, then in the order of their first running job's id; the launching ones
    counted apart."""
    store = Store(":memory:")
    with store.transaction():
        for name in ("a", "b"):
            store.add_cluster(name, "local", {}, 0.0)
        campaigns = [store.create_campaign(f"c{n}", "u", CampaignType.DEFAULT, {}, {"a": {}}, 0.0) for n in range(3)]
        for campaign_id in reversed(campaigns):  # the later campaigns' jobs have the lesser ids
            store.add_jobs(campaign_id, [([f"j{i}" for i in range(4)], [f"p{i}" for i in range(4)])])
        jobs = {c: [job.id for job in store.jobs(c)] for c in campaigns}
        first, second, third = campaigns
        for campaign_id, sent in ((first, 3), (second, 4), (third, 4)):
            ids = jobs[campaign_id][:sent]
            store.finish_batch(store.create_batch("a", campaign_id, ids, 1.0), {i: str(i) for i in ids}, 1.0)
        store.create_batch("a", first, jobs[first][3:], 2.0)  # launching
        store.create_batch("b", second, [], 2.0)
        store.mark_running([(jobs[second][3], 5.0), (jobs[third][0], 5.0), (jobs[third][1], 6.0)])
    assert store.grid_counts("a") == [(first, 3, 0), (third, 2, 2), (second, 3, 1)]
    assert store.grid_counts("b") == []
    assert (store.launching_count("a"), store.launching_count("b")) == (1, 0)


def test_the_ended_campaigns_remembered_are_those_that_ended_last(tmp_path):
    """What the cycle remembers of the clusters' speeds (cigri.cycle.metasched._slowness): the mean durations
    of the campaigns that ended last, terminated or cancelled, by their end time, not their id; a running
    campaign's are the pass's own, and one none of whose jobs ended says nothing."""
    store = Store(tmp_path / "state.db")
    ids = [store.create_campaign(f"c{i}", "u", CampaignType.DEFAULT, {}, {}, float(i)) for i in range(5)]
    for cid, (mean, slow) in zip(ids, [(10.0, 20.0), (30.0, 60.0), (50.0, 100.0), (70.0, 140.0)], strict=False):
        store.add_durations([(cid, "fast", mean, 0.0), (cid, "slow", slow, 0.0), (cid, "slow", slow, 0.0)], 60.0)
    assert store.last_end() is None and store.ended_durations(2) == []
    store.set_campaign_state(ids[1], CampaignState.TERMINATED, now=300.0)
    store.set_campaign_state(ids[0], CampaignState.CANCELLED, now=400.0)  # the latest end, the lowest id
    store.set_campaign_state(ids[2], CampaignState.TERMINATED, now=100.0)
    store.set_campaign_state(ids[4], CampaignState.TERMINATED, now=500.0)  # no job of it ended
    assert store.last_end() == 500.0
    assert sorted(store.ended_durations(3)) == [
        (ids[0], 50.0 / 3, {"fast": (10.0, 1), "slow": (20.0, 2)}),
        (ids[1], 50.0, {"fast": (30.0, 1), "slow": (60.0, 2)}),
    ]
    assert len(store.ended_durations(4)) == 3  # the fourth that ended last is ids[2]; ids[3] still runs
    store.close()


def test_a_campaign_reopened_after_it_ended_teaches_the_speeds_once(tmp_path):
    """The cycle learns the speeds from the pass's campaigns and the remembered ended ones: a campaign reopened
    since (its end cleared) but still remembered counts once, not twice; with no end left, nothing is
    remembered; with an oracle (true durations handed to the strategies) nothing is learned."""
    store = Store(tmp_path / "state.db")
    ids = [store.create_campaign(f"c{i}", "u", CampaignType.DEFAULT, {}, {}, float(i)) for i in range(2)]
    store.add_durations([(ids[0], "fast", 10.0, 0.0), (ids[0], "slow", 30.0, 0.0)], 60.0)
    store.add_durations([(ids[1], "fast", 10.0, 0.0), (ids[1], "slow", 10.0, 0.0)], 60.0)
    for cid in ids:
        store.set_campaign_state(cid, CampaignState.TERMINATED, now=100.0 + cid)
    ctx = SimpleNamespace(oracle=None, store=store, remembered=(None, []))
    both = [Record(20.0, {"fast": (10.0, 1), "slow": (30.0, 1)}), Record(10.0, {"fast": (10.0, 1), "slow": (10.0, 1)})]
    assert _slowness(ctx, []) == slowness(both)
    assert _slowness(SimpleNamespace(oracle=lambda _: 20.0, store=store, remembered=(None, [])), []) == {}
    reopened = CampaignView(
        ids[0], CampaignType.DEFAULT, "u", 0.0, 1, {}, estimate=20.0,
        estimates={"fast": 10.0, "slow": 30.0}, samples={"fast": 1, "slow": 1},
    )  # fmt: skip
    assert _slowness(ctx, [reopened]) == slowness(both)
    assert _slowness(ctx, [reopened]) != slowness([both[0], *both])  # counted twice, it would weigh more
    store.conn.execute("UPDATE campaigns SET ended_at = NULL, state = 'in_treatment'")
    assert _slowness(ctx, []) == {} and ctx.remembered == (None, [])
    store.close()
