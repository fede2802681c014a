"""Which jobs the metascheduler's launches take, for campaigns with input files: the configured job picker
(``locality``, see :mod:`cigri.scheduling.locality`) chooses them on what the store says each cluster's cache
holds. Campaigns without input files keep the store's order (lowest ids first).

For each such campaign, every launch of the pass is decided at once: the jobs resuming from a checkpoint held
on a cluster go there first (as :meth:`~cigri.store.Store.next_jobs` does), then the picker chooses among the
other waiting jobs (the deferred ones only once none other waits), never giving a cluster a job that avoids
it. A picker's state per campaign (``cursors``'s teams and ranges) is kept as the strategy state
``picker.NAME``: ``{campaign id: state}``, for the campaigns still running.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from .. import config
from ..scheduling import Assignment, Snapshot
from ..scheduling.locality import Holdings, Waiting
from .context import Context

Job = tuple[int, str, str, bool, float | None]  # what Store.next_jobs gives: id, name, params, resumes, scale


def state_name(picker_name: str) -> str:
    return f"picker.{picker_name}"


@dataclass
class Picked:
    campaigns: set[int]  # the campaigns whose launches were picked for
    jobs: dict[tuple[str, int], list[Job]]  # (cluster, campaign id) -> its launches' jobs, all of them


def pick(ctx: Context, snapshot: Snapshot, plan: Sequence[Assignment]) -> Picked:
    """The jobs of the launches of campaigns with input files (the caller takes the store's next jobs for
    the other campaigns)."""
    by_campaign: dict[int, list[Assignment]] = defaultdict(list)
    for assignment in plan:
        by_campaign[assignment.campaign_id].append(assignment)
    with_files = ctx.store.with_input_files(list(by_campaign))
    if not with_files:
        return Picked(set(), {})
    picker = config.job_picker(ctx.store.settings())
    name = state_name(picker.name)
    kept = ctx.store.strategy_states().get(name, {})
    states = {key: value for key, value in kept.items() if int(key) in {c.id for c in snapshot.campaigns}}
    now = ctx.clock.now()
    chosen: dict[tuple[str, int], list[Job]] = {}
    for campaign_id in sorted(with_files):
        assignments = by_campaign[campaign_id]
        wanted: dict[str, int] = {}
        for a in assignments:
            wanted[a.cluster] = wanted.get(a.cluster, 0) + a.jobs
        for cluster, n in list(wanted.items()):
            chosen[cluster, campaign_id] = ctx.store.resuming_jobs(campaign_id, cluster, n)
            wanted[cluster] = n - len(chosen[cluster, campaign_id])
        holdings = Holdings(
            tuple(Waiting(job_id, files) for job_id, files in ctx.store.pickable_jobs(campaign_id)),
            held={cluster: frozenset(keys) for cluster, keys in ctx.store.campaign_cluster_files(campaign_id).items()},
            speeds=_speeds(snapshot, campaign_id),
            exclude=_avoided(ctx, campaign_id, now),
            sizes=ctx.store.waiting_file_sizes(campaign_id),
        )
        picks, state = picker.pick(holdings, wanted, states.get(str(campaign_id), {}))
        if state:
            states[str(campaign_id)] = state
        for cluster, ids in picks.items():
            chosen[cluster, campaign_id] += ctx.store.jobs_by_id(ids)
    if states or kept:
        ctx.store.set_strategy_state(name, states)
    return Picked(with_files, chosen)


def _avoided(ctx: Context, campaign_id: int, now: float) -> dict[str, frozenset[int]]:
    """The jobs each cluster must not get: those avoiding it (killed or taken back there lately), when the
    campaign has somewhere else to send them."""
    if campaign_id not in ctx.choosy:
        return {}
    return {cluster: frozenset(ids) for cluster, ids in ctx.store.avoiding_jobs(campaign_id, now).items()}


def _speeds(snapshot: Snapshot, campaign_id: int) -> dict[str, float]:
    """Each cluster's jobs of the campaign per second: the slots it has for them over Spritz's job duration
    there (else the campaign's, else 1 s: then speeds are proportional to slots)."""
    campaign = next((c for c in snapshot.campaigns if c.id == campaign_id), None)
    if campaign is None:
        return {}
    speeds = {}
    for cluster in snapshot.clusters:
        demand = campaign.demands.get(cluster.name)
        if demand is None:
            continue
        duration = campaign.estimates.get(cluster.name) or campaign.estimate or 1.0
        speeds[cluster.name] = cluster.slots / demand.slots_per_job / duration
    return speeds
