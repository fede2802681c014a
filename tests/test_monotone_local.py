"""Never slower with more clusters, on real processes (issue 21, item 8): the 12-job campaign a new user would
try on the embedded ``local`` cluster ends no later when a second, smaller local cluster is added. It took
21.1 s instead of 12.8 s when the 1-slot cluster took 10 of the 12 jobs into its queue (list-order fill)."""

from __future__ import annotations

from pathlib import Path

from cigri import clusters
from cigri.clock import RealClock
from cigri.store import Store

from .conftest import Grid, stop_local_daemons, write_jdl

JOBS = 12
SECONDS = 2


def campaign_span(root: Path, job_script: Path, extra_cluster: bool) -> tuple[float, dict[str, int]]:
    """(seconds from the campaign's first start to its last end, as the jobs' records say; jobs per cluster)
    of 12 jobs of ``sleep 2`` on ``local`` (2 slots), with or without a 1-slot ``extra`` listed before it."""
    state = root / "state.db"
    store = Store(state)
    try:
        clusters.ensure_default(store, RealClock())
        clusters.set_options(store, "local", {"slots": 2, "idle_exit": 2})
    finally:
        store.close()
    grid = Grid(state)
    names = {}
    if extra_cluster:  # first, by name and in the JDL: a list-order fill would queue most jobs there
        grid("gridclusters", "add", "extra", "--adapter", "local", "--slots", "1")
        names["extra"] = {}
    names["local"] = {}
    params = [f"j{i} sleep:{SECONDS}" for i in range(JOBS)]
    grid.submit(write_jdl(root, exec_file=str(job_script), params=params, clusters=names))
    try:
        grid.until_done(timeout=90)
    finally:
        stop_local_daemons(root)
    store = Store(state)
    try:
        first, last, done = store.conn.execute(
            "SELECT min(started_at), max(ended_at), count(*) FROM jobs WHERE state = 'terminated'"
        ).fetchone()
        placed = dict(store.conn.execute("SELECT cluster, count(*) FROM jobs GROUP BY cluster").fetchall())
    finally:
        store.close()
    assert done == JOBS
    return last - first, placed


def test_a_second_smaller_local_cluster_never_slows_the_campaign(tmp_path, job_script):
    alone, _ = campaign_span(tmp_path / "one", job_script, extra_cluster=False)
    beside, placed = campaign_span(tmp_path / "two", job_script, extra_cluster=True)
    assert alone >= JOBS / 2 * SECONDS, "6 waves of 2 jobs on 2 slots"
    assert beside <= alone * 1.02, (beside, alone, placed)
    assert placed.get("extra", 0) <= JOBS / 3 + 1, f"the 1-slot cluster drains a third of the work at most: {placed}"
