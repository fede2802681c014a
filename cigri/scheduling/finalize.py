"""finalize, the 2009 design's campaign-level mode: "to accelerate the closing of campaigns, the scheduler
promotes the replication of remaining jobs ... Once these jobs have finished successfully, the replicas are
aborted." It composes with every strategy: :func:`cigri.scheduling.decide` asks :func:`replicas` after the
strategy's launches. The cycle runs each replica as a second submission of the same job; the first copy to end
successfully makes the job terminated and the others are cancelled (see :mod:`cigri.cycle.replicas`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model import CampaignType
from . import CampaignView, Decision, GridJob, Replica, Snapshot


def replicas(snapshot: Snapshot, decision: Decision) -> tuple[Replica, ...]:
    """The replicas to start this pass, after the ``decision``'s launches.

    A campaign replicates once it has ``finalize``, no job left to launch, and fewer active jobs than the jobs
    the free slots left on its clusters (after the launches, and after the replicas of older campaigns) could
    take. Each of its active jobs then gets at most one replica, running jobs first (the oldest start first),
    then queued ones (the oldest submission first), each on the cluster with the most free slots left among
    those the campaign has a demand on, within that demand's limit, and never where a copy of the job already
    is (its original or a replica): copies of a job never share a cluster. Test campaigns never replicate.
    """
    free = _free_after(snapshot, decision)
    copies: dict[int, set[str]] = {}
    originals: dict[int, list[GridJob]] = {}
    for cluster in snapshot.clusters:
        for job in cluster.jobs:
            copies.setdefault(job.job_id, set()).add(cluster.name)
            if not job.replica:
                originals.setdefault(job.campaign_id, []).append(job)
    placed: list[Replica] = []
    for campaign in sorted(snapshot.campaigns, key=lambda c: (c.submitted_at, c.id)):
        if not campaign.finalize or campaign.waiting > 0 or campaign.type == CampaignType.TEST:
            continue
        active = originals.get(campaign.id, [])
        room = sum(free.get(name, 0) // demand.slots_per_job for name, demand in campaign.demands.items())
        if not active or len(active) >= room:
            continue
        placed.extend(_place(campaign, active, copies, free))
    return tuple(placed)


def _free_after(snapshot: Snapshot, decision: Decision) -> dict[str, int]:
    """Each cluster's free slots once the decision's launches take theirs."""
    free = {cluster.name: cluster.free for cluster in snapshot.clusters}
    demands = {campaign.id: campaign.demands for campaign in snapshot.campaigns}
    for launch in decision.launches:
        demand = demands.get(launch.campaign_id, {}).get(launch.cluster)
        if demand is not None and launch.cluster in free:
            free[launch.cluster] = max(0, free[launch.cluster] - launch.jobs * demand.slots_per_job)
    return free


def _place(
    campaign: CampaignView, active: list[GridJob], copies: Mapping[int, set[str]], free: dict[str, int]
) -> list[Replica]:
    """One replica per job at most, in the order :func:`replicas` gives; spends ``free``."""
    placed = []
    per_cluster: dict[str, int] = {}
    order = sorted(active, key=lambda j: (not j.running, j.started_at if j.running else j.submitted_at, j.job_id))
    for job in order:
        candidates = [
            name
            for name, demand in campaign.demands.items()
            if name not in copies[job.job_id]
            and free.get(name, 0) >= demand.slots_per_job
            and per_cluster.get(name, 0) < demand.limit
        ]
        if not candidates:
            continue
        cluster = min(candidates, key=lambda name: (-free[name], name))
        free[cluster] -= campaign.demands[cluster].slots_per_job
        per_cluster[cluster] = per_cluster.get(cluster, 0) + 1
        placed.append(Replica(cluster, job.job_id))
    return placed
