"""The metascheduler stage: take back jobs stuck in queues, build the snapshot, let the strategy decide,
and record its launches as batches for the runner."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ..model import Campaign, CampaignState, CampaignType, EventClass, EventCode, JobState
from ..scheduling import Assignment, CampaignView, ClusterView, Demand, Snapshot, decide
from .context import Context, log
from .health import cancel_each, capacities, usable


def run(ctx: Context) -> None:
    """Choose jobs for each cluster and record them as batches for the runner."""
    campaigns = ctx.store.campaigns(states=[CampaignState.IN_TREATMENT])
    if not campaigns:
        return
    budgets: list[ClusterView] = []
    for name, capacity in capacities(ctx, usable(ctx, [c.name for c in ctx.store.clusters()])).items():
        launching = ctx.store.active_count(name).get(JobState.LAUNCHING.value, 0)
        depth = 0 if _queue_stalled(ctx, name) else getattr(ctx.adapter(name), "queue_depth", 0)
        free = max(0, capacity.free - capacity.queued - launching)
        queue = max(0, depth - max(0, capacity.queued + launching - capacity.free))
        budgets.append(ClusterView(name, free, queue))
    _take_back(ctx, campaigns, budgets)
    _recall(ctx)
    ctx.avoided = ctx.store.avoided(ctx.clock.now())
    views = [view for c in campaigns if (view := _campaign_view(ctx, c, {b.name for b in budgets}))]
    decision = decide(ctx.scheduler, Snapshot(ctx.clock.now(), tuple(budgets), tuple(views)), {})
    _record(ctx, decision.launches)


def _queue_stalled(ctx: Context, cluster: str) -> bool:
    """Do cigri's jobs queued on the cluster not start? Either none started since the oldest was queued
    (plus a grace), or jobs were taken back from there and none started since: queueing more there would
    park them."""
    last_start, last_recall = ctx.store.cluster_flow(cluster)
    if last_recall is not None and (last_start is None or last_start < last_recall):
        return True
    oldest = ctx.store.oldest_queued(cluster)
    if oldest is None or ctx.clock.now() - oldest < ctx.patience.queue_grace:
        return False
    return last_start is None or last_start < oldest


def _places(ctx: Context, campaign: Campaign, open_clusters: set[str]) -> dict[str, dict]:
    """The clusters where the campaign may send jobs now, with their progress."""
    blocked = ctx.store.blocked_clusters(campaign.id)
    return {
        name: info
        for name, info in ctx.store.campaign_clusters(campaign.id, settings=False).items()
        if name in open_clusters and name not in blocked and info["prologue_state"] in ("none", "done")
    }


def _take_back(ctx: Context, campaigns: Sequence[Campaign], budgets: Sequence[ClusterView]) -> None:
    """Jobs pending past the queue wait. A test job ends its campaign's test on that cluster, with an event
    naming it; another job is taken back when a cluster of its campaign has a free slot for it now (it
    then avoids the cluster it waited on). Recorded here; :func:`_recall` asks the RMs."""
    now = ctx.clock.now()
    free = {b.name: b.free for b in budgets}
    by_id = {c.id: c for c in campaigns}  # running campaigns: a paused one's jobs stay where they are
    places: dict[int, dict[str, dict]] = {}
    for cluster in free:
        recall, stalled_tests = [], []
        for job_id, campaign_id in ctx.store.overdue_jobs(cluster, now - ctx.patience.queue_wait):
            campaign = by_id.get(campaign_id)
            if campaign is None:
                continue
            if campaign.type == CampaignType.TEST:
                stalled_tests.append((job_id, campaign_id))
                continue
            settings = ctx.settings(campaign_id)
            if campaign_id not in places:
                places[campaign_id] = _places(ctx, campaign, set(free))
            elsewhere = next(
                (name for name in places[campaign_id] if name != cluster and free[name] >= settings[name]["_slots"]),
                None,
            )
            if elsewhere is not None:
                free[elsewhere] -= settings[elsewhere]["_slots"]
                recall.append(job_id)
        if not recall and not stalled_tests:
            continue
        with ctx.store.transaction():
            ctx.store.request_recall(recall + [job_id for job_id, _ in stalled_tests], cluster, now)
            for job_id, campaign_id in stalled_tests:
                ctx.store.open_event(
                    EventClass.CAMPAIGN,
                    EventCode.TEST_NOT_STARTED,
                    f"test job {job_id} did not start on {cluster} within {ctx.patience.queue_wait:g} s: "
                    f"the test ends there",
                    now,
                    cluster=cluster,
                    campaign_id=campaign_id,
                    job_id=job_id,
                )
        log.info("metasched: %s: %d pending jobs taken back", cluster, len(recall) + len(stalled_tests))


def _recall(ctx: Context) -> None:
    """Cancel on their RMs the pending jobs recorded to be taken back, and return them to their bags,
    neither a failure nor a resubmission. One that started meanwhile stays where it runs."""
    per_cluster: dict[str, list[tuple[int, str]]] = defaultdict(list)
    started = []
    for job_id, cluster, state, remote in ctx.store.jobs_to_recall():
        if state == JobState.SUBMITTED.value and remote is not None:
            per_cluster[cluster].append((job_id, remote))
        else:
            started.append(job_id)
    if started:
        with ctx.store.transaction():
            ctx.store.clear_recall(started)

    def taken_back(cluster: str, ids: list[int]) -> None:
        ctx.store.clear_recall(ids)
        ctx.store.requeue(ids, count_resubmit=False, avoid=ctx.avoiding(cluster))
        ctx.report.add("taken back", len(ids))

    cancel_each(ctx, per_cluster, taken_back)


def _campaign_view(ctx: Context, campaign: Campaign, open_clusters: set[str]) -> CampaignView | None:
    waiting = ctx.store.counts(campaign.id)[JobState.TO_LAUNCH]
    if not waiting:
        return None
    demands = {}
    active = None
    places = _places(ctx, campaign, open_clusters)
    if len(places) > 1:  # a job killed or taken back by a cluster goes elsewhere, when there is an elsewhere
        ctx.choosy.add(campaign.id)
    else:
        ctx.choosy.discard(campaign.id)
    for name, info in places.items():
        settings = ctx.settings(campaign.id)[name]
        slots = settings["_slots"]
        limit = waiting
        if campaign.id in ctx.choosy:
            limit -= ctx.avoided.get((campaign.id, name), 0)
        if campaign.type == CampaignType.TEST:
            limit = min(limit, 0 if info["launched"] else 1)
        if settings.get("max_jobs"):
            if active is None:
                active = {n: ctx.store.active_by_campaign(n).get(campaign.id, 0) for n in places}
            limit = min(limit, settings["max_jobs"] - active[name])
        if limit > 0:
            demands[name] = Demand(slots, limit)
    return CampaignView(campaign.id, campaign.type, campaign.user, campaign.submitted_at, waiting, demands)


def _record(ctx: Context, plan: Sequence[Assignment]) -> None:
    now = ctx.clock.now()
    with ctx.store.transaction():
        for assignment in plan:
            avoiding = (assignment.cluster, now) if assignment.campaign_id in ctx.choosy else None
            jobs = ctx.store.next_jobs(assignment.campaign_id, assignment.jobs, avoiding)
            size = getattr(ctx.adapter(assignment.cluster), "max_batch", None) or len(jobs) or 1
            for start in range(0, len(jobs), size):  # RMs cap array sizes
                chunk = [j[0] for j in jobs[start : start + size]]
                ctx.fresh.add(ctx.store.create_batch(assignment.cluster, assignment.campaign_id, chunk, now))
            if jobs:
                ctx.report.add("scheduled", len(jobs))
                log.info(
                    "metasched: %d jobs of campaign %d for %s",
                    len(jobs),
                    assignment.campaign_id,
                    assignment.cluster,
                )
