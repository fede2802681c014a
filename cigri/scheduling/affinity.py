"""``affinity`` (CiGri's 2009 scheduler design): users' home clusters serve their campaigns first, the other
campaigns take what is left, and a job that failed on a cluster takes it last.

The design's note of 20 May 2009 replaces the FIFO of default campaigns by an order over (user, cluster)
affinities: each cluster has the campaigns with an affinity for it, then the others; its example launches
campaign1 on cluster1, campaign2 on cluster1 and cluster2, campaign1 on cluster2, then campaign3 on cluster1
and cluster2 (campaign1 at home on cluster1, campaign2 on both, campaign3 on none). Exactly:

- ``affinities`` maps a user to its home clusters, in order of preference. A campaign tries its clusters in
  that order: its user's home clusters by preference, then its other clusters in the snapshot's order.
- Jobs are placed at three levels, each over all campaigns (oldest first) before the next level:

  1. *home*: a cluster of the user's home clusters, for jobs that never failed there;
  2. *foreign*: the campaign's other clusters, for jobs that never failed there;
  3. *failed*: any of the campaign's clusters for the jobs left, those that failed or were killed there
     included. A job's affinity to a cluster drops after it failed there: it goes to other clusters first,
     and takes that cluster only when no campaign's fresh jobs want it.

  The failure history is a count per cluster (``Demand.failed``: the campaign's waiting jobs that failed or
  were killed there), so at levels 1 and 2 a campaign sends a cluster at most its jobs still to place minus
  those that failed there (the runner picks which jobs).
- Free slots are spent first, every cluster and all three levels, then queue allowances the same way: jobs do
  not wait in one cluster's queue while another has idle slots.
- A campaign sends a cluster at most its demand's limit, and only jobs that fit in what is left of the budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..model import CampaignType
from . import CampaignView, ClusterView, Decision, Demand, Snapshot, State, evaluates, inputs, launches, register

_LEVELS = ("home", "foreign", "failed")


def _read_affinities(data: Mapping[str, Any], path: str) -> dict[str, tuple[str, ...]]:
    affinities = inputs.mapping(data, "affinities", path, {})
    path = f"{path}.affinities" if path else "affinities"
    homes_by_user = {}
    for user in affinities:
        homes = inputs.sequence(affinities, user, path)
        for index, cluster in enumerate(homes):
            if not isinstance(cluster, str) or not cluster:
                raise ConfigError(f"{path}.{user}[{index}]: must be a cluster name, got {cluster!r}")
            if cluster in homes[:index]:
                raise ConfigError(f"{path}.{user}[{index}]: {cluster!r} is listed twice")
        homes_by_user[str(user)] = tuple(homes)
    return homes_by_user


@register
class Affinity:
    """Home campaigns first on their users' home clusters (see the module's docstring for the exact rule)."""

    name = "affinity"
    options = ("affinities",)

    def __init__(self, affinities: Mapping[str, Sequence[str]] | None = None):
        self.affinities = {user: tuple(clusters) for user, clusters in (affinities or {}).items()}

    @classmethod
    def configure(cls, options: Mapping[str, Any]) -> Affinity:
        """Option ``affinities``: {user: [cluster, ...]}, each user's home clusters in order of preference."""
        path = f"metasched.{cls.name}"
        inputs.known(options, cls.options, path, "option")
        return cls(_read_affinities(options, path))

    def decide(self, snapshot: Snapshot, state: State) -> Decision:
        return Decision(launches=launches(self.plan(snapshot)))

    def plan(self, snapshot: Snapshot) -> dict[tuple[str, int], int]:
        """Jobs per (cluster, campaign id), in the order they were placed."""
        names = [cluster.name for cluster in snapshot.clusters]
        routes = [self.routes(campaign, set(names)) for campaign in sorted(snapshot.campaigns, key=_age)]
        left = {campaign.id: campaign.waiting for campaign in snapshot.campaigns}
        taken: dict[tuple[str, int], int] = {}
        for kind in ("free", "queue"):
            budget = {cluster.name: getattr(cluster, kind) for cluster in snapshot.clusters}
            open_clusters = [name for name in names if budget[name] > 0]  # in the snapshot's order
            for level in _LEVELS:
                for campaign, homes in routes:
                    if not open_clusters:
                        break
                    if left[campaign.id] <= 0:
                        continue
                    clusters = [name for name in homes if budget[name] > 0] if level != "foreign" else []
                    if level != "home":
                        clusters += [name for name in open_clusters if name in campaign.demands and name not in homes]
                    for cluster in clusters:
                        demand: Demand = campaign.demands[cluster]
                        fresh = left[campaign.id] if level == "failed" else left[campaign.id] - demand.failed
                        jobs = min(
                            fresh,
                            demand.limit - taken.get((cluster, campaign.id), 0),
                            budget[cluster] // demand.slots_per_job,
                        )
                        if jobs > 0:
                            taken[cluster, campaign.id] = taken.get((cluster, campaign.id), 0) + jobs
                            left[campaign.id] -= jobs
                            budget[cluster] -= jobs * demand.slots_per_job
                            if budget[cluster] == 0:
                                open_clusters.remove(cluster)
        return taken

    def routes(self, campaign: CampaignView, clusters: set[str]) -> tuple[CampaignView, list[str]]:
        """The campaign with its user's home clusters by preference, those of ``clusters`` it has a demand on."""
        homes = self.affinities.get(campaign.user, ())
        return campaign, [name for name in homes if name in campaign.demands and name in clusters]


def _age(campaign: CampaignView) -> tuple[float, int]:
    return campaign.submitted_at, campaign.id


_CAMPAIGN = ("clusters", "failed", "id", "max_jobs", "slots_per_job", "user", "waiting")


@evaluates("affinity")
def evaluate(scenario: Mapping[str, Any]) -> dict:
    """Where each campaign's jobs go in one pass, by users' home clusters (CiGri's 2009 design).

    Input:  {"clusters": {"lyon": {"free": 4, "queue": 0}, ...},
             "affinities": {"alice": ["lyon", ...]},
             "campaigns": [{"id": 1, "user": "alice", "waiting": 3, "clusters": ["lyon", ...],
                            "failed": {"lyon": 1}, "slots_per_job": 1, "max_jobs": 3}, ...]}
    Output: {"launches": {"lyon": {"1": 2, ...}, ...}}

    clusters, in their order: free slots and queue allowance (0 unless given); affinities: each
    user's home clusters, by preference ({} unless given); campaigns, oldest first: waiting jobs,
    usable clusters (all unless given), per cluster the waiting jobs that already failed there
    ({}), slots per job (1), at most max_jobs per cluster (all). Free slots first, then queue
    allowances; each time home campaigns (oldest first) on their home clusters, then every
    campaign (oldest first) on its other clusters, both without the jobs that failed on that
    cluster; last, every job left, failed ones included. Clusters and campaigns given nothing are
    left out.

    Example: {"clusters": {"lyon": {"free": 4}, "grenoble": {"free": 2}}, "affinities": {"alice":
    ["lyon"]}, "campaigns": [{"id": 1, "user": "carol", "waiting": 5}, {"id": 2, "user": "alice",
    "waiting": 3, "failed": {"lyon": 1}}]}
    gives {"launches": {"lyon": {"2": 2, "1": 2}, "grenoble": {"1": 2}}}.
    """
    inputs.known(scenario, ("affinities", "campaigns", "clusters"))
    clusters = []
    for name, budget in inputs.mapping(scenario, "clusters").items():
        path = f"clusters.{name}"
        inputs.known(budget, ("free", "queue"), path)
        clusters.append(
            ClusterView(str(name), inputs.integer(budget, "free", path, 0), inputs.integer(budget, "queue", path, 0))
        )
    strategy = Affinity(_read_affinities(scenario, ""))
    names = [cluster.name for cluster in clusters]
    campaigns = _scenario_campaigns(scenario, names)
    placed = strategy.plan(Snapshot(0.0, tuple(clusters), tuple(campaigns)))
    result: dict[str, dict[str, int]] = {}
    for (cluster, campaign_id), jobs in sorted(placed.items(), key=lambda item: names.index(item[0][0])):
        result.setdefault(cluster, {})[str(campaign_id)] = jobs
    return {"launches": result}


def _scenario_campaigns(scenario: Mapping[str, Any], clusters: Sequence[str]) -> list[CampaignView]:
    campaigns: list[CampaignView] = []
    for index, (path, item) in enumerate(inputs.records(scenario, "campaigns", _CAMPAIGN, "id")):
        waiting = inputs.integer(item, "waiting", path)
        usable = inputs.sequence(item, "clusters", path, list(clusters))
        for position, name in enumerate(usable):
            if name not in clusters:
                raise ConfigError(f"{path}.clusters[{position}]: unknown cluster {name!r}")
        failed = inputs.mapping(item, "failed", path, {})
        for name in failed:
            if name not in usable:
                raise ConfigError(f"{path}.failed.{name}: not one of the campaign's clusters")
            if inputs.integer(failed, name, f"{path}.failed") > waiting:
                raise ConfigError(f"{path}.failed.{name}: must be <= waiting ({waiting}), got {failed[name]!r}")
        slots_per_job = inputs.integer(item, "slots_per_job", path, 1, minimum=1)
        limit = inputs.integer(item, "max_jobs", path, waiting)
        demands = {name: Demand(slots_per_job, limit, failed.get(name, 0)) for name in usable}
        user = inputs.text(item, "user", path)
        campaigns.append(CampaignView(item["id"], CampaignType.DEFAULT, user, float(index), waiting, demands))
    return campaigns
