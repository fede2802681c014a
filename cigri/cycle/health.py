"""Cluster health, shared by the stages: a cluster that fails a call is closed for the pass, with an
event from its first failing pass; a cluster with an open event is asked again, and its answer closes it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import AdapterError
from ..model import Capacity, EventClass, EventCode
from .context import Context, log

ANSWERED = "auto-fixed: the cluster answers again"  # why a transport event closed itself


def gather(ctx: Context, names: Sequence[str], method: str, *args: object, report: bool = True) -> dict[str, object]:
    """``method(*args)`` of each cluster, asked concurrently; the answers of those that gave one, in the
    order of ``names``. The others are closed for the pass (and reported, with ``report``)."""
    pending = {}
    for name in names:
        try:
            pending[name] = ctx.adapter(name).start(method, *args)
        except AdapterError as exc:
            if report:
                cluster_failed(ctx, name, exc)
    answers = {}
    for name, call in pending.items():
        try:
            answers[name] = call.result()
        except AdapterError as exc:
            if report:
                cluster_failed(ctx, name, exc)
    return answers


def cluster_failed(ctx: Context, cluster: str, exc: AdapterError) -> None:
    """Whatever went wrong, the cluster is closed for the pass, with an event from its first failing pass."""
    ctx.adapter(cluster).fail(exc)
    if ctx.store.open_cluster_event(cluster) is None:
        with ctx.store.transaction():
            ctx.store.open_event(
                EventClass.CLUSTER, EventCode.CLUSTER_UNREACHABLE, str(exc), ctx.clock.now(), cluster=cluster
            )
        log.warning("cluster %s: %s (no new jobs until it answers)", cluster, exc)


def usable(ctx: Context, names: Sequence[str]) -> list[str]:
    """The clusters open for this pass: not failed in it, and with no open cluster event or answering
    again (those are asked concurrently; an answer closes the event)."""
    names = [name for name in names if ctx.adapter(name).failure is None]
    events = {name: event for name in names if (event := ctx.store.open_cluster_event(name))}
    answered = gather(ctx, list(events), "capacity", report=False)
    for name in answered:
        with ctx.store.transaction():
            ctx.store.close_events([events[name].id], ctx.clock.now(), ANSWERED)
        log.info("cluster %s answers again: event %d closed", name, events[name].id)
    return [name for name in names if name not in events or name in answered]


def cluster_usable(ctx: Context, cluster: str) -> bool:
    return bool(usable(ctx, [cluster]))


def capacities(ctx: Context, names: Sequence[str]) -> dict[str, Capacity]:
    """The capacity of each cluster that answers, asked of all concurrently; the readings are kept for
    gridclusters -u / -b (as CiGri's updator samples the grid's usage)."""
    answered: dict[str, Capacity] = gather(ctx, names, "capacity")  # type: ignore[assignment]
    if answered:
        with ctx.store.transaction():
            ctx.store.record_usage(answered, ctx.clock.now())
    return answered


def cancel_each(
    ctx: Context, per_cluster: dict[str, list[tuple[int, str]]], record: Callable[[str, list[int]], None]
) -> None:
    """Cancel (job, remote id) pairs cluster by cluster, then ``record`` each cluster's jobs in a
    transaction. A cluster that does not answer keeps its jobs for a later pass."""
    for cluster, jobs in per_cluster.items():
        if not cluster_usable(ctx, cluster):
            continue
        try:
            ctx.adapter(cluster).cancel([remote for _, remote in jobs])
        except AdapterError as exc:
            cluster_failed(ctx, cluster, exc)
            continue
        with ctx.store.transaction():
            record(cluster, [job_id for job_id, _ in jobs])
