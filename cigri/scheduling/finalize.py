"""finalize, the 2009 design's campaign-level mode: "to accelerate the closing of campaigns, the scheduler
promotes the replication of remaining jobs ... Once these jobs have finished successfully, the replicas are
aborted." It composes with every strategy: the cycle asks :func:`replicas` once the strategies of the pass
have decided their launches. The cycle runs each replica as a second submission of the same job; the first copy to end
successfully makes the job terminated and the others are cancelled (see :mod:`cigri.cycle.replicas`).
"""

from __future__ import annotations

from ..model import CampaignType
from . import CampaignView, Decision, GridJob, Replica, Snapshot


def replicas(snapshot: Snapshot, decision: Decision) -> tuple[Replica, ...]:
    """The replicas to start this pass, after the ``decision``'s launches.

    A campaign replicates once it has ``finalize``, no job left to launch, and fewer active jobs than the jobs
    the free slots left on its clusters (after the launches, and after the replicas of older campaigns) could
    take. Each of its active jobs then gets a replica, unless it has or had one (a job gets one at most), running
    jobs first (the oldest start first), then queued ones (the oldest submission first), each on the cluster
    with the most free slots left among those the campaign has a demand on, within that demand's limit, and
    never where the job runs: copies of a job never share a cluster. Test campaigns never replicate.
    """
    finalizing = [c for c in snapshot.campaigns if c.finalize and c.waiting <= 0 and c.type != CampaignType.TEST]
    if not finalizing:
        return ()  # no campaign replicates: the clusters' jobs are not even looked at
    free = _free_after(snapshot, decision)
    replicated: set[int] = set()
    originals: dict[int, list[tuple[str, GridJob]]] = {}
    for cluster in snapshot.clusters:
        for job in cluster.jobs:
            if job.replica or job.replicated:
                replicated.add(job.job_id)
            if not job.replica:
                originals.setdefault(job.campaign_id, []).append((cluster.name, job))
    placed: list[Replica] = []
    for campaign in sorted(finalizing, key=lambda c: (c.submitted_at, c.id)):
        active = originals.get(campaign.id, [])
        room = sum(free.get(name, 0) // demand.slots_per_job for name, demand in campaign.demands.items())
        if not active or len(active) >= room:
            continue
        placed.extend(_place(campaign, [(c, j) for c, j in active if j.job_id not in replicated], free))
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


def _place(campaign: CampaignView, active: list[tuple[str, GridJob]], free: dict[str, int]) -> list[Replica]:
    """A replica for each (cluster, job) that finds a place, in the order :func:`replicas` gives; spends
    ``free``."""
    placed = []
    per_cluster: dict[str, int] = {}

    def age(item: tuple[str, GridJob]) -> tuple:
        job = item[1]
        return (not job.running, job.started_at if job.running else job.submitted_at, job.job_id)

    for where, job in sorted(active, key=age):
        candidates = [
            name
            for name, demand in campaign.demands.items()
            if name != where and free.get(name, 0) >= demand.slots_per_job and per_cluster.get(name, 0) < demand.limit
        ]
        if not candidates:
            continue
        cluster = min(candidates, key=lambda name: (-free[name], name))
        free[cluster] -= campaign.demands[cluster].slots_per_job
        per_cluster[cluster] = per_cluster.get(cluster, 0) + 1
        placed.append(Replica(cluster, job.job_id))
    return placed
