"""What the commands show of campaigns, jobs, events and clusters, built once from the state: the commands
render these records (as tables, or as ``--json``) and ``grid serve`` answers with them, so that a command
shows the same through the service (:mod:`cigri.client`) as on the state file. Each record's keys are named
here (``*_KEYS``), in their order: the service's answers carry them beside CiGri's own names and links, and
:func:`pick` takes a record back out of an answer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from . import campaigns as ops
from . import clusters as cluster_ops
from . import notify
from .clock import Clock
from .errors import CigriError, NotFound
from .jdl import Jdl
from .model import Campaign, CampaignState, Event, Job, JobState
from .prediction import Spread
from .secrets import mask
from .store import Store

CAMPAIGN_KEYS = (
    "id",
    "name",
    "user",
    "type",
    "submitted_at",
    "state",
    "done",
    "total",
    "failed",
    "running",
    "waiting",
    "open_events",
)
SPRITZ_KEYS = (
    "throughput_per_hour",
    "average_duration",
    "stddev_duration",
    "ended",
    "left",
    "estimated_end",
    "estimated_end_low",
    "estimated_end_high",
)
JOB_ROW_KEYS = ("id", "campaign_id", "remote_id", "state", "cluster", "name", "params", "exit_code")
JOB_KEYS = (
    "id",
    "campaign_id",
    "name",
    "params",
    "state",
    "cluster",
    "remote_id",
    "exit_code",
    "submitted_at",
    "started_at",
    "ended_at",
    "resubmits",
    "preemptions",
    "resumes",
    "checkpoint_cluster",
    "held",
)
EVENT_KEYS = (
    "id",
    "class",
    "code",
    "state",
    "cluster",
    "campaign_id",
    "job_id",
    "parent_id",
    "created_at",
    "closed_at",
    "closed_by",
    "message",
)
CLUSTER_KEYS = (
    "name",
    "adapter",
    "reachable",
    "slots",
    "used",
    "used_by_grid",
    "queued_by_grid",
    "best_effort",
    "problem",
    "state",
)
CLUSTER_INFO_KEYS = ("name", "adapter", "state", "problem", "settings", "events")
USAGE_KEYS = ("cluster", "max", "used", "used_by_grid", "unavailable", "recorded_at")
SUBMITTED_KEYS = ("id", "name", "user", "type", "state", "submitted_at", "jobs", "jdl")


def pick(answer: Mapping, keys: tuple[str, ...]) -> dict:
    """The record of ``keys`` held in a service's answer, in the record's order."""
    return {key: answer[key] for key in keys}


def campaign_row(
    store: Store, campaign: Campaign, open_events: int, counts: Mapping[JobState, int] | None = None
) -> dict:
    """A campaign as gridstat lists it: its progress (jobs done of those that will run), failed, running and
    waiting jobs, open events. ``counts``: its jobs by state when already read (a list reads all at once)."""
    counts = store.counts(campaign.id) if counts is None else counts
    return {
        "id": campaign.id,
        "name": campaign.name,
        "user": campaign.user,
        "type": campaign.type.value,
        "submitted_at": campaign.submitted_at,
        "state": campaign.state.value,
        "done": counts[JobState.TERMINATED],
        "total": sum(counts.values()) - counts[JobState.SKIPPED],
        "failed": counts[JobState.EVENT],
        "running": counts[JobState.RUNNING],
        "waiting": counts[JobState.TO_LAUNCH] + counts[JobState.LAUNCHING] + counts[JobState.SUBMITTED],
        "open_events": open_events,
    }


def spritz(figures: Mapping, blocked: bool = False) -> dict:
    """Spritz's figures (of a campaign, or of its jobs on one cluster) as gridstat shows them; no estimated end
    for a blocked campaign (it ends when its user, or a cluster's return, unblocks it)."""
    spread = Spread.kept(figures)
    if blocked:
        figures = {**figures, "eta": None, "eta_low": None, "eta_high": None}
    rate = figures.get("rate")
    return {
        "throughput_per_hour": None if rate is None else rate * 3600,
        "average_duration": spread.mean,
        "stddev_duration": spread.std,
        "ended": spread.n,
        "left": figures.get("left"),
        "estimated_end": figures.get("eta"),
        "estimated_end_low": figures.get("eta_low"),
        "estimated_end_high": figures.get("eta_high"),
    }


def eta_row(store: Store, campaign: Campaign, open_events: int) -> dict:
    """A running campaign as gridstat --eta lists it: its row and Spritz's figures."""
    blocked = ops.blocked_reason(store, campaign) is not None
    return {**campaign_row(store, campaign, open_events), **spritz(store.stats(campaign.id), blocked)}


def campaign_summary(store: Store, campaign: Campaign) -> dict:
    """A campaign as gridstat -c shows it: its row, held jobs, copies killed, Spritz's figures, each cluster's
    part, why it is blocked, and the forecast history."""
    blocked = ops.blocked_reason(store, campaign)
    figures = store.cluster_stats(campaign.id)
    per_cluster = []
    for name, info in store.campaign_clusters(campaign.id).items():
        per_cluster.append(
            {
                "cluster": name,
                "launched": info["launched"],
                "active": store.active_by_campaign(name).get(campaign.id, 0),
                "prologue": info["prologue_state"],
                "epilogue": info["epilogue_state"],
                "cluster_active": sum(store.active_count(name).values()),
                **spritz(figures.get(name, {}), bool(blocked)),
            }
        )
    return {
        **campaign_row(store, campaign, store.open_event_counts().get(campaign.id, 0)),
        "held": store.held_count(campaign.id),
        "waste": store.waste(campaign.id),  # copies killed: their jobs ran again while their cluster was away
        **spritz(store.stats(campaign.id), bool(blocked)),
        "ended_at": campaign.ended_at,
        "clusters": per_cluster,
        "blocked": blocked,
        "forecasts": store.forecasts(campaign.id),  # Spritz's history, thinned as it ages
    }


def submitted(campaign: Campaign, jobs: int) -> dict:
    """A campaign as gridsub -d prints it once submitted (CiGri's API answered a submission with it)."""
    return {
        "id": campaign.id,
        "name": campaign.name,
        "user": campaign.user,
        "type": campaign.type.value,
        "state": campaign.state.value,
        "submitted_at": campaign.submitted_at,
        "jobs": jobs,
        "jdl": campaign.jdl,
    }


def job_row(job: Job) -> dict:
    """A job as gridstat -f lists it (CiGri's job_id,remote_id,state,cluster,name,params)."""
    return {
        "id": job.id,
        "campaign_id": job.campaign_id,
        "remote_id": job.remote_id,
        "state": job.state.value,
        "cluster": job.cluster,
        "name": job.name,
        "params": job.params,
        "exit_code": job.exit_code,
    }


def job_record(store: Store, job: Job) -> dict:
    """A job as gridstat -j shows it."""
    return {
        "id": job.id,
        "campaign_id": job.campaign_id,
        "name": job.name,
        "params": job.params,
        "state": job.state.value,
        "cluster": job.cluster,
        "remote_id": job.remote_id,
        "exit_code": job.exit_code,
        "submitted_at": job.submitted_at,
        "started_at": job.started_at,
        "ended_at": job.ended_at,
        "resubmits": job.resubmits,
        "preemptions": job.preemptions,
        "resumes": job.resumes,
        "checkpoint_cluster": job.checkpoint_cluster,
        "held": store.is_held(job.id),
    }


def event_record(event: Event) -> dict:
    """An event as gridevents lists it."""
    return {
        "id": event.id,
        "class": event.cls.value,
        "code": event.code.value,
        "state": event.state.value,
        "cluster": event.cluster,
        "campaign_id": event.campaign_id,
        "job_id": event.job_id,
        "parent_id": event.parent_id,
        "created_at": event.created_at,
        "closed_at": event.closed_at,
        "closed_by": event.closed_by,
        "message": event.message,
    }


def recorded_state(store: Store, name: str) -> str:
    """A cluster's state as recorded, for the views that ask nothing: BLACKLISTED (by the admin), PROBLEM (an
    open cluster event: it does not answer) or ok."""
    if store.blacklist(None, name) is not None:
        return "BLACKLISTED"
    return "PROBLEM" if store.open_cluster_event(name) else "ok"


def cluster_rows(store: Store, clock: Clock) -> list[dict]:
    """The clusters as gridclusters lists them: each asked now."""
    rows = []
    for usage in cluster_ops.usage(store, clock):
        capacity = usage.capacity
        rows.append(
            {
                "name": usage.name,
                "adapter": usage.adapter,
                "reachable": usage.reachable,
                "slots": capacity.total if capacity else None,
                "used": capacity.used if capacity else None,
                "used_by_grid": capacity.grid_used if capacity else None,
                "queued_by_grid": capacity.queued if capacity else None,
                "best_effort": usage.best_effort,
                "problem": usage.problem,
                "state": usage.state,
            }
        )
    return rows


def cluster_info(store: Store, clock: Clock, name: str) -> dict:
    """One cluster as gridclusters -i shows it: the state and problem as the list shows them (the cluster
    asked now), its settings (secrets masked), its open events."""
    cluster = store.cluster(name)
    (asked,) = cluster_ops.usage(store, clock, [name])
    return {
        "name": cluster.name,
        "adapter": cluster.adapter,
        "state": asked.state,
        "problem": asked.problem,
        "settings": mask(cluster.config),
        "events": [
            {"id": e.id, "code": e.code.value, "campaign_id": e.campaign_id, "message": e.message}
            for e in store.events()
            if e.cluster == name
        ],
    }


def usage_rows(store: Store) -> list[dict]:
    """Each cluster's last recorded capacity: max slots (down ones included), used, used by the grid,
    unavailable (those its RM reported down, drained or failing; all of them while the cluster is
    blacklisted or does not answer, as CiGri counts a down cluster's resources)."""
    recorded = store.recorded_usage()
    rows = []
    for cluster in store.clusters():
        capacity, at = recorded.get(cluster.name, (None, None))
        down = recorded_state(store, cluster.name) != "ok"
        rows.append(
            {
                "cluster": cluster.name,
                "max": capacity.total + capacity.down if capacity else None,
                "used": capacity.used if capacity else None,
                "used_by_grid": capacity.grid_used if capacity else None,
                "unavailable": (capacity.total + capacity.down if down else capacity.down) if capacity else None,
                "recorded_at": at,
            }
        )
    return rows


class Local:
    """What the commands ask, answered from the state file (:class:`cigri.client.Remote` asks the service):
    the records above, and the changes of :mod:`cigri.campaigns` as the running user."""

    def __init__(self, store: Store, clock: Clock):
        self.store = store
        self.clock = clock

    # -- reading

    def campaign_rows(self, user: str | None) -> list[dict]:
        events = self.store.open_event_counts()
        return [campaign_row(self.store, c, events.get(c.id, 0)) for c in self.store.campaigns(user=user)]

    def eta_rows(self, user: str | None) -> list[dict]:
        events = self.store.open_event_counts()
        running = self.store.campaigns(user=user, states=[CampaignState.IN_TREATMENT])
        return [eta_row(self.store, c, events.get(c.id, 0)) for c in running]

    def summary(self, campaign_id: int) -> dict:
        return campaign_summary(self.store, self.store.campaign(campaign_id))

    def check_campaign(self, campaign_id: int) -> None:
        self.store.campaign(campaign_id)

    def jdl(self, campaign_id: int) -> dict:
        owned = self.store.campaign(campaign_id)
        ops.check_owner(owned, ops.current_user())
        return owned.jdl

    def job(self, job_id: int) -> dict:
        job = self.store.job(job_id)
        ops.check_owner(self.store.campaign(job.campaign_id), ops.current_user())
        return job_record(self.store, job)

    def output(self, job_id: int, stream: str) -> str:
        from .adapters import AdapterContext, adapter_for

        job = self.store.job(job_id)
        ops.check_owner(self.store.campaign(job.campaign_id), ops.current_user())
        if not job.cluster or not job.remote_id:
            raise CigriError(f"job {job_id} has not run yet: no {stream}")
        cluster = self.store.cluster_of_outputs(job.cluster)  # a removed cluster's jobs keep their outputs
        adapter = adapter_for(cluster, AdapterContext(self.store.directory, self.clock))
        try:
            return adapter.tail(job.remote_id, stream, 0)
        finally:
            adapter.close()

    def rm_details(self, job_id: int) -> dict:
        return ops.rm_details(self.store, job_id, self.clock)

    def job_rows(self, campaign_ids: list[int]) -> Iterator[dict]:
        for cid in campaign_ids:
            for job in self.store.jobs(cid):
                yield job_row(job)

    def campaign_ids(self, user: str | None) -> list[int]:
        return [c.id for c in self.store.campaigns(user=user)]

    def events(self, campaign_id, event_id, show_all, code, global_only) -> list[dict]:
        found = self.store.events(
            campaign_id=campaign_id,
            event_id=event_id,
            open_only=not show_all and event_id is None,
            code=code,
            global_only=global_only,
        )
        if event_id is not None and not found:
            raise NotFound(f"no event {event_id}")
        return [event_record(event) for event in found]

    def cluster_rows(self) -> list[dict]:
        return cluster_rows(self.store, self.clock)

    def cluster_info(self, name: str) -> dict:
        return cluster_info(self.store, self.clock, name)

    def usage_rows(self) -> list[dict]:
        return usage_rows(self.store)

    def subscriptions(self) -> list[dict]:
        return self.store.subscriptions(ops.current_user())

    # -- changing

    def submit(self, jdl: Jdl, test: bool | None, base_dir: Path) -> tuple[int, int, list[str]]:
        """(campaign id, its jobs, the warnings): the clusters the state does not know left out, each warned."""
        jdl, warnings = ops.known_clusters(self.store, jdl)
        campaign_id, count = ops.submit(self.store, jdl, self.clock)
        return campaign_id, count, warnings

    def add_jobs(self, campaign_id: int, extra: Jdl) -> int:
        return ops.add_jobs(self.store, campaign_id, extra)

    def submitted(self, campaign_id: int) -> dict:
        return submitted(self.store.campaign(campaign_id), self.store.campaign_jobs(campaign_id))

    def pause(self, campaign_id: int) -> None:
        ops.pause(self.store, campaign_id)

    def resume(self, campaign_id: int) -> None:
        ops.resume(self.store, campaign_id, clock=self.clock)

    def cancel(self, campaign_id: int) -> int:
        return ops.cancel(self.store, campaign_id, self.clock)

    def purge(self, campaign_ids: list[int]) -> None:
        ops.purge(self.store, campaign_ids).remove()  # committed: the rows are gone, now their files

    def cancel_job(self, job_id: int) -> str:
        return ops.cancel_job(self.store, job_id)

    def fix_events(self, campaign_id, event_id, code, resubmit) -> tuple[int, int]:
        result = ops.fix_events(
            self.store, self.clock, campaign_id=campaign_id, event_id=event_id, code=code, resubmit=resubmit
        )
        return result.closed, result.resubmitted

    def subscribe(self, kind: str, target: str, severity: str) -> bool:
        return notify.subscribe(self.store, ops.current_user(), kind, target, severity, self.clock)

    def unsubscribe(self, kind: str | None, target: str | None) -> int:
        with self.store.transaction():
            return self.store.unsubscribe(ops.current_user(), kind, target)
