"""Nikita: kill the jobs users cancelled and the copies left on clusters that were unreachable; hold
paused campaigns' queued jobs and release resumed ones."""

from __future__ import annotations

from collections import defaultdict

from ..errors import AdapterError
from ..model import JobState
from ..store import Store
from . import replicas
from .context import Context, log
from .health import cancel_each, cluster_failed, cluster_usable


def run(ctx: Context) -> None:
    """Kill the jobs users cancelled and the copies left on a cluster that was unreachable; hold paused
    campaigns' queued jobs, release resumed ones."""
    _cancel_orphans(ctx)
    per_cluster: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for job_id, _, cluster, state, remote in ctx.store.jobs_to_kill():
        if state == JobState.LAUNCHING.value or remote is None:
            continue  # still being submitted: killed next pass, once it has a remote id
        per_cluster[cluster].append((job_id, remote))

    def killed(cluster: str, ids: list[int]) -> None:
        ctx.store.set_job_state(ids, JobState.CANCELLED, only_from=(JobState.SUBMITTED, JobState.RUNNING))
        ctx.store.clear_kill(ids)
        ctx.report.add("killed", len(ids))
        log.info("nikita: %d jobs killed on %s", len(ids), cluster)

    cancel_each(ctx, per_cluster, killed)
    replicas.cancel(ctx)
    _hold_paused(ctx)


def _cancel_orphans(ctx: Context) -> None:
    """Cancel, on the clusters that answer again, the copies of jobs that ran again elsewhere."""
    per_cluster: dict[str, list[tuple[int, str | None, str | None]]] = defaultdict(list)
    for orphan_id, cluster, remote, key in ctx.store.orphans():
        per_cluster[cluster].append((orphan_id, remote, key))
    for cluster, orphans in per_cluster.items():
        if not cluster_usable(ctx, cluster):
            continue
        adapter = ctx.adapter(cluster)
        try:
            remote_ids = [remote for _, remote, _ in orphans if remote is not None]
            for _, _, key in orphans:
                remote_ids.extend((adapter.find_batch(key) or []) if key is not None else [])
            if remote_ids:
                adapter.cancel(remote_ids)
        except AdapterError as exc:
            cluster_failed(ctx, cluster, exc)
            continue
        with ctx.store.transaction():
            ctx.store.drop_orphans([orphan_id for orphan_id, _, _ in orphans])
        log.info("nikita: %d copies of jobs that ran elsewhere cancelled on %s", len(remote_ids), cluster)


def _hold_paused(ctx: Context) -> None:
    """Hold paused campaigns' queued jobs on their RM, release those of resumed campaigns.

    A hold is recorded as asked before the RM call and as done after it, a release is recorded after
    it: a pass killed in between leaves the job to be asked again (both calls are idempotent), never
    held on a cluster with nothing in cigri's state to release it."""
    to_hold: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for job_id, cluster, remote in ctx.store.jobs_to_hold():
        to_hold[cluster].append((job_id, remote))
    to_release: dict[str, list[tuple[int, str]]] = defaultdict(list)
    gone = []  # no longer queued or running: nothing left to release on the RM
    for job_id, cluster, state, remote in ctx.store.jobs_to_release():
        if state in (JobState.SUBMITTED.value, JobState.RUNNING.value) and remote is not None:
            to_release[cluster].append((job_id, remote))
        else:
            gone.append(job_id)
    if gone:
        with ctx.store.transaction():
            ctx.store.set_hold(gone, Store.HOLD_NONE)
    for cluster, jobs in to_hold.items():
        _hold_on(ctx, cluster, jobs, hold=True)
    for cluster, jobs in to_release.items():
        _hold_on(ctx, cluster, jobs, hold=False)


def _hold_on(ctx: Context, cluster: str, jobs: list[tuple[int, str]], *, hold: bool) -> None:
    """Hold or release jobs on one cluster; a cluster that fails gets an event and is asked next pass."""
    if not cluster_usable(ctx, cluster):
        return
    ids = [job_id for job_id, _ in jobs]
    if hold:
        with ctx.store.transaction():
            ctx.store.set_hold(ids, Store.HOLD_ASKED)
    adapter = ctx.adapter(cluster)
    try:
        (adapter.hold if hold else adapter.release)([remote for _, remote in jobs])
    except AdapterError as exc:
        cluster_failed(ctx, cluster, exc)
        return
    with ctx.store.transaction():
        ctx.store.set_hold(ids, Store.HOLD_DONE if hold else Store.HOLD_NONE)
    what = "held" if hold else "released"
    ctx.report.add(what, len(ids))
    log.info("nikita: %d jobs %s on %s", len(ids), what, cluster)
