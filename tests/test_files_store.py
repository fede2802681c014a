"""The store's input files and cluster caches (migration 014_files): the counts the triggers keep, the
locality reads, and the deletion hints."""

from __future__ import annotations

from cigri.model import CampaignType, DataFile, JobState
from cigri.store import Store

A, B, C = DataFile("a.dat", 10, "aa" * 32), DataFile("b.dat", 20, "bb" * 32), DataFile("c.dat", 30, "cc" * 32)


def _campaign(store: Store, uses: dict[str, list[str]]) -> tuple[int, list[int]]:
    """A campaign whose jobs j0, j1, ... use the files named in ``uses[job name]``."""
    with store.transaction():
        cid = store.create_campaign("c", "u", CampaignType.DEFAULT, {}, {"local": {}}, 0.0)
        store.add_jobs(cid, [(list(uses), list(uses))])
        ids = [job.id for job in store.jobs(cid)]
        store.add_files(cid, [A, B, C], [(i, key) for i, keys in zip(ids, uses.values(), strict=True) for key in keys])
    return cid, ids


def test_waiting_files_count_to_launch_jobs_and_name_the_lowest(tmp_path):
    store = Store(tmp_path / "s.db")
    cid, ids = _campaign(store, {"j0": ["a.dat"], "j1": ["a.dat", "b.dat"], "j2": ["b.dat"], "j3": []})
    assert store.waiting_files(cid) == {"a.dat": (2, ids[0]), "b.dat": (2, ids[1])}
    store.set_job_state([ids[0], ids[1]], JobState.LAUNCHING)
    assert store.waiting_files(cid) == {"b.dat": (1, ids[2])}
    assert store.jobs_using(cid, "b.dat", 10) == [ids[2]]
    assert store.job_files([ids[1], ids[3]]) == {ids[1]: [A, B]}
    assert store.waiting_job_files(cid) == [(ids[2], ("b.dat",))]


def test_waiting_job_files_in_id_order_up_to_a_limit(tmp_path):
    store = Store(tmp_path / "s.db")
    cid, ids = _campaign(store, {"j0": ["b.dat", "a.dat"], "j1": [], "j2": ["c.dat"], "j3": ["a.dat"]})
    assert store.waiting_job_files(cid) == [(ids[0], ("a.dat", "b.dat")), (ids[2], ("c.dat",)), (ids[3], ("a.dat",))]
    assert store.waiting_job_files(cid, limit=2) == [(ids[0], ("a.dat", "b.dat")), (ids[2], ("c.dat",))]


def test_jobs_using_a_file_come_in_increasing_order(tmp_path):
    store = Store(tmp_path / "s.db")
    cid, ids = _campaign(store, {f"j{i}": ["a.dat"] if i % 2 else ["b.dat"] for i in range(8)})
    assert store.jobs_using(cid, "a.dat", 3) == [ids[1], ids[3], ids[5]]
    assert store.jobs_using(cid, "a.dat", 3, after=ids[3]) == [ids[5], ids[7]]


def test_a_copy_no_remaining_job_needs_becomes_unneeded(tmp_path):
    store = Store(tmp_path / "s.db")
    cid, ids = _campaign(store, {"j0": ["a.dat"], "j1": ["a.dat"], "j2": ["b.dat"]})
    file_ids = store.file_ids(cid, ["a.dat", "b.dat"])
    with store.transaction():
        for key in ("a.dat", "b.dat"):
            store.note_staging("local", file_ids[key], 10, 1.0)
            store.set_held("local", file_ids[key], 2.0)
    assert store.cluster_files("local", cid) == {"a.dat", "b.dat"}
    assert store.cache_used("local") == 20
    store.set_job_state([ids[0]], JobState.TERMINATED)
    assert store.unneeded_files("local", 10) == []  # j1 still needs a.dat
    store.set_job_state([ids[1]], JobState.EVENT)  # failed, waiting for the user: still needs it
    assert store.unneeded_files("local", 10) == []
    store.set_job_state([ids[1]], JobState.CANCELLED)
    assert store.unneeded_files("local", 10) == [(file_ids["a.dat"], cid, "a.dat")]
    store.forget_cluster_files("local", [file_ids["a.dat"]])
    assert store.cluster_files("local", cid) == {"b.dat"}


def test_evictable_copies_spare_those_active_jobs_use(tmp_path):
    store = Store(tmp_path / "s.db")
    cid, ids = _campaign(store, {"j0": ["a.dat"], "j1": ["b.dat"]})
    file_ids = store.file_ids(cid, ["a.dat", "b.dat"])
    with store.transaction():
        store.note_staging("local", file_ids["b.dat"], 20, 1.0)
        store.set_held("local", file_ids["b.dat"], 1.0)
        store.note_staging("local", file_ids["a.dat"], 10, 2.0)
        store.set_held("local", file_ids["a.dat"], 2.0)
    assert [row[2] for row in store.evictable("local")] == ["b.dat", "a.dat"]  # least recently used first
    store.conn.execute("UPDATE jobs SET cluster = 'local' WHERE id = ?", (ids[1],))
    store.set_job_state([ids[1]], JobState.RUNNING)
    assert [row[2] for row in store.evictable("local")] == ["a.dat"]
