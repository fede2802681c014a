"""The almighty cycle: updator -> spritz -> metasched -> runner -> nikita, one pass at a time.

Every stage reads the state, acts, and commits in short transactions, so a pass killed at any point
is finished by the next one: a submission is recorded as a batch (its jobs ``launching``) before the
resource manager is called, and the batch key lets the next pass ask the RM whether it already holds
it instead of submitting it again.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, replace

from .adapters import AdapterContext, ResourceManager, adapter_for
from .clock import Clock
from .errors import AdapterError, Busy, SubmitError, TransportError
from .jdl import parse_resources, resource_slots, split_params
from .model import (
    Campaign,
    CampaignState,
    CampaignType,
    EventClass,
    EventCode,
    JobSpec,
    JobState,
    RemoteState,
)
from .prediction import Predictor, Sample, predictor
from .scheduling import Assignment, CampaignView, ClusterView, Demand, MetaScheduler, metascheduler
from .store import Store

log = logging.getLogger("cigri.cycle")

RESUBMIT_EXIT = (66, 67)  # CiGri: 66 resubmit, 67 resubmit at the end (both resubmitted here)
MAX_RESUBMITS = 5  # a job killed or asking for resubmission more often opens an event
RETRY = "retry:"  # a stage to run again keeps "retry:<attempt>:<previous remote id>": the next key derives from it


def stage_remote(value: str) -> tuple[str, int]:
    """(remote id, attempt) of a submitted prologue/epilogue, stored as "<remote id>#<attempt>"."""
    remote, _, attempt = value.partition("#")
    return remote, int(attempt or 0)


def stage_retry(value: str | None) -> tuple[int, str] | None:
    """(attempt, previous remote id) of a stage waiting to run again, or None for a first run."""
    if not value or not value.startswith(RETRY):
        return None
    attempt, _, previous = value.removeprefix(RETRY).partition(":")
    return int(attempt), previous


LOST_AFTER = 3600  # seconds a job may stay unknown to its RM (and accounting) before it is run again
STDERR_LINES = 5
STAGES = ("updator", "spritz", "metasched", "runner", "nikita")


@dataclass
class PassReport:
    """What one pass did, stage by stage (also what the CLI prints with -v)."""

    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def add(self, key: str, n: int = 1) -> None:
        if n:
            self.counts[key] += n


class Cycle:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        scheduler: MetaScheduler | None = None,
        forecaster: Predictor | None = None,
        adapters: Callable[[str], ResourceManager] | None = None,
    ):
        self.store = store
        self.clock = clock
        self.scheduler = scheduler or metascheduler()
        self.forecaster = forecaster or predictor()
        self._adapters: dict[str, ResourceManager] = {}
        self._factory = adapters or self._default_factory
        self.report = PassReport()
        self._seen: dict[str, object] = {}  # each cluster's activity token when cigri last looked
        self._fresh: set[int] = set()  # batches recorded by this pass: no RM can hold them yet
        self._settings_cache: dict[int, dict[str, dict]] = {}

    def _default_factory(self, name: str) -> ResourceManager:
        return adapter_for(self.store.cluster(name), AdapterContext(self.store.directory, self.clock))

    def adapter(self, name: str) -> ResourceManager:
        if name not in self._adapters:
            self._adapters[name] = self._factory(name)
        return self._adapters[name]

    def close(self) -> None:
        for adapter in self._adapters.values():
            adapter.close()
        self._adapters.clear()

    # ---- the pass -------------------------------------------------------------------------------

    def run(self, stages: Sequence[str] = STAGES) -> PassReport:
        self.report = PassReport()
        self._fresh.clear()
        for stage in stages:
            getattr(self, stage)()
        return self.report

    def _look(self, cluster: str) -> None:
        self._seen[cluster] = self.adapter(cluster).activity()

    def _watch(self, cluster: str) -> None:
        """Before submitting: what the cluster does next is news to a waiting loop."""
        if cluster not in self._seen:
            self._look(cluster)

    def news(self) -> bool:
        """Has a cluster changed since cigri last read it? (lets a looping almighty wake before its period)"""
        return any(self.adapter(name).activity() != token for name, token in self._seen.items() if token is not None)

    # ---- cluster health -------------------------------------------------------------------------

    def _cluster_failed(self, cluster: str, exc: AdapterError) -> None:
        if self.store.open_cluster_event(cluster) is None:
            with self.store.transaction():
                self.store.open_event(
                    EventClass.CLUSTER, EventCode.CLUSTER_UNREACHABLE, str(exc), self.clock.now(), cluster=cluster
                )
            log.warning("cluster %s: %s (no new jobs until it answers)", cluster, exc)

    def _cluster_usable(self, cluster: str) -> bool:
        """True when the cluster has no open cluster event, or answers again (the event is closed)."""
        event = self.store.open_cluster_event(cluster)
        if event is None:
            return True
        try:
            self.adapter(cluster).capacity()
        except AdapterError:
            return False
        with self.store.transaction():
            self.store.close_events([event.id], self.clock.now())
        log.info("cluster %s answers again: event %d closed", cluster, event.id)
        return True

    # ---- updator --------------------------------------------------------------------------------

    def updator(self) -> None:
        """Collect job states from each cluster (one bulk query each) and settle campaigns."""
        for cluster in self.store.clusters():
            if self._cluster_usable(cluster.name):
                try:
                    self._collect(cluster.name)
                    self._collect_stages(cluster.name)
                except TransportError as exc:
                    self._cluster_failed(cluster.name, exc)
        self._settle_campaigns()

    def _collect(self, cluster: str) -> None:
        active = self.store.active_jobs(cluster)
        if not active:
            return
        adapter = self.adapter(cluster)
        self._look(cluster)
        statuses = adapter.states([remote for _, _, _, remote, _ in active])
        now = self.clock.now()
        started, ended, requeue, failed, durations = [], [], [], [], []
        unknown, known_again = [], []
        for job_id, campaign_id, state, remote, unknown_since in active:
            status = statuses.get(remote)
            if status is not None and status.state == RemoteState.UNKNOWN:
                if unknown_since is None:
                    unknown.append(job_id)
                elif now - unknown_since > LOST_AFTER:  # never assumed done: taken as lost, run again
                    requeue.append((job_id, campaign_id, f"unknown to {cluster} for {LOST_AFTER // 60} minutes"))
                continue
            if unknown_since is not None and status is not None:
                known_again.append(job_id)
            if status is None or status.state == RemoteState.PENDING:
                continue
            if status.state == RemoteState.RUNNING:
                if state == JobState.SUBMITTED.value:
                    started.append((job_id, status.started_at or now))
                continue
            start, end = status.started_at, status.ended_at or now
            if status.state == RemoteState.KILLED or status.exit_code in RESUBMIT_EXIT:
                requeue.append((job_id, campaign_id, status.reason or f"exit status {status.exit_code}"))
            elif status.exit_code == 0:
                ended.append((job_id, JobState.TERMINATED, 0, start, end))
                durations.append((campaign_id, max(0.0, end - (start or end))))
            else:
                ended.append((job_id, JobState.EVENT, status.exit_code, start, end))
                how = f"exited with status {status.exit_code}" if status.exit_code is not None else status.reason
                failed.append((job_id, campaign_id, remote, how))
        tails = {job_id: adapter.tail(remote, "stderr", STDERR_LINES) for job_id, _, remote, _ in failed}
        counts = self.store.resubmit_counts([job_id for job_id, _, _ in requeue]) if requeue else {}
        with self.store.transaction():
            self.store.set_unknown_since(unknown, now)
            self.store.set_unknown_since(known_again, None)
            self.store.mark_running(started)
            self.store.mark_ended(ended)
            self.store.add_durations(durations)
            for job_id, campaign_id, _remote, how in failed:
                tail = tails[job_id]
                message = f"job {job_id} {how}" + (f"; stderr ends with:\n{tail}" if tail else "")
                self.store.open_event(
                    EventClass.JOB,
                    EventCode.EXIT_ERROR,
                    message,
                    now,
                    cluster=cluster,
                    campaign_id=campaign_id,
                    job_id=job_id,
                )
            again = [job_id for job_id, _, _ in requeue if counts.get(job_id, 0) < MAX_RESUBMITS]
            self.store.requeue(again)
            for job_id, campaign_id, reason in requeue:
                if counts.get(job_id, 0) >= MAX_RESUBMITS:
                    self.store.mark_ended([(job_id, JobState.EVENT, None, None, now)])
                    self.store.open_event(
                        EventClass.JOB,
                        EventCode.RESUBMIT_LIMIT,
                        f"job {job_id} was resubmitted {MAX_RESUBMITS} times; last end: {reason}",
                        now,
                        cluster=cluster,
                        campaign_id=campaign_id,
                        job_id=job_id,
                    )
        self.report.add("started", len(started))
        self.report.add("terminated", len(durations))
        self.report.add("failed", len(failed))
        self.report.add("resubmitted", len(again))
        if ended or requeue:
            log.info(
                "updator: %s: %d running, %d terminated, %d failed, %d resubmitted",
                cluster,
                len(started),
                len(durations),
                len(failed),
                len(again),
            )

    def _collect_stages(self, cluster: str) -> None:
        """Prologues and epilogues running on the cluster."""
        pending = [s for s in self.store.stages_in(("submitted",)) if s[1] == cluster]
        if not pending:
            return
        adapter = self.adapter(cluster)
        self._look(cluster)
        statuses = adapter.states([stage_remote(value)[0] for *_, value in pending])
        now = self.clock.now()
        with self.store.transaction():
            for campaign_id, _, stage, _, value in pending:
                remote, attempt = stage_remote(value)
                status = statuses.get(remote)
                if status is None or status.state in (RemoteState.PENDING, RemoteState.RUNNING, RemoteState.UNKNOWN):
                    continue
                if status.state == RemoteState.KILLED and attempt < MAX_RESUBMITS:  # again, under a key of its own
                    again = "due" if stage == "epilogue" else "todo"
                    self.store.set_stage(campaign_id, cluster, stage, again, f"{RETRY}{attempt + 1}:{remote}")
                elif status.state == RemoteState.EXITED and status.exit_code == 0:
                    self.store.set_stage(campaign_id, cluster, stage, "done", remote)
                else:  # exited non-zero, or killed too often
                    self.store.set_stage(campaign_id, cluster, stage, "failed", remote)
                    tail = adapter.tail(remote, "stderr", STDERR_LINES)
                    code = EventCode.PROLOGUE_ERROR if stage == "prologue" else EventCode.EPILOGUE_ERROR
                    self.store.open_event(
                        EventClass.CAMPAIGN,
                        code,
                        (
                            f"{stage} exited with status {status.exit_code}"
                            if status.state == RemoteState.EXITED
                            else f"{stage} killed {MAX_RESUBMITS + 1} times, last: {status.reason}"
                        )
                        + (f"; stderr ends with:\n{tail}" if tail else ""),
                        now,
                        cluster=cluster,
                        campaign_id=campaign_id,
                    )

    def _settle_campaigns(self) -> None:
        """End test campaigns that ran their one job per cluster, start epilogues, mark campaigns terminated."""
        now = self.clock.now()
        open_events = self.store.open_event_counts()
        for campaign in self.store.campaigns(states=[CampaignState.IN_TREATMENT]):
            counts = self.store.counts(campaign.id)
            clusters = self.store.campaign_clusters(campaign.id, settings=False)
            busy = sum(counts[s] for s in (JobState.LAUNCHING, JobState.SUBMITTED, JobState.RUNNING))
            with self.store.transaction():
                if (
                    campaign.type == CampaignType.TEST
                    and busy == 0
                    and counts[JobState.TO_LAUNCH]
                    and all(info["launched"] > 0 for info in clusters.values())
                ):
                    skipped = self.store.drop_waiting(campaign.id, JobState.SKIPPED)
                    counts[JobState.TO_LAUNCH] = 0
                    log.info("campaign %d: test done, %d jobs skipped", campaign.id, skipped)
                if busy or counts[JobState.TO_LAUNCH] or open_events.get(campaign.id):
                    continue
                epilogues = {name: info["epilogue_state"] for name, info in clusters.items()}
                for name, state in epilogues.items():
                    if state == "todo":
                        ran = clusters[name]["launched"] > 0
                        self.store.set_stage(campaign.id, name, "epilogue", "due" if ran else "none")
                        epilogues[name] = "due" if ran else "none"
                if all(state in ("none", "done", "failed") for state in epilogues.values()):
                    self.store.set_campaign_state(campaign.id, CampaignState.TERMINATED, now)
                    self.report.add("campaigns terminated")
                    log.info("campaign %d terminated", campaign.id)

    # ---- spritz ---------------------------------------------------------------------------------

    def spritz(self) -> None:
        """Throughput and estimated end of every running campaign."""
        now = self.clock.now()
        for campaign in self.store.campaigns(states=[CampaignState.IN_TREATMENT]):
            stats = self.store.stats(campaign.id)
            if stats["sample_at"] is not None and now - stats["sample_at"] < self.forecaster.min_interval:
                continue
            counts = self.store.counts(campaign.id)
            remaining = sum(
                counts[s] for s in (JobState.TO_LAUNCH, JobState.LAUNCHING, JobState.SUBMITTED, JobState.RUNNING)
            )
            done = counts[JobState.TERMINATED]
            forecast = self.forecaster.forecast(
                Sample(now, done, remaining, stats["sample_at"], stats["sample_done"] or 0, stats["throughput"])
            )
            with self.store.transaction():
                self.store.set_forecast(campaign.id, now, done, forecast.throughput, forecast.eta)

    # ---- metascheduler --------------------------------------------------------------------------

    def metasched(self) -> None:
        """Choose jobs for each cluster and record them as batches for the runner."""
        campaigns = self.store.campaigns(states=[CampaignState.IN_TREATMENT])
        if not campaigns:
            return
        usable = [c.name for c in self.store.clusters() if self._cluster_usable(c.name)]
        budgets: list[ClusterView] = []
        for name in usable:
            try:
                capacity = self.adapter(name).capacity()
            except TransportError as exc:
                self._cluster_failed(name, exc)
                continue
            launching = self.store.active_count(name).get(JobState.LAUNCHING.value, 0)
            depth = getattr(self.adapter(name), "queue_depth", 0)
            free = max(0, capacity.free - capacity.queued - launching)
            queue = max(0, depth - max(0, capacity.queued + launching - capacity.free))
            budgets.append(ClusterView(name, free, queue))
        views = [view for c in campaigns if (view := self._campaign_view(c, {b.name for b in budgets}))]
        plan = self.scheduler.plan(views, budgets)
        self._record(plan)

    def _campaign_view(self, campaign: Campaign, usable: set[str]) -> CampaignView | None:
        waiting = self.store.counts(campaign.id)[JobState.TO_LAUNCH]
        if not waiting:
            return None
        blocked = self.store.blocked_clusters(campaign.id)
        demands = {}
        clusters = self.store.campaign_clusters(campaign.id, settings=False)
        active = None
        for name, info in clusters.items():
            if name not in usable or name in blocked or info["prologue_state"] not in ("none", "done"):
                continue
            settings = self._settings(campaign.id)[name]
            slots = settings["_slots"]
            limit = waiting
            if campaign.type == CampaignType.TEST:
                limit = 0 if info["launched"] else 1
            if settings.get("max_jobs"):
                if active is None:
                    active = {n: self.store.active_by_campaign(n).get(campaign.id, 0) for n in clusters}
                limit = min(limit, settings["max_jobs"] - active[name])
            if limit > 0:
                demands[name] = Demand(slots, limit)
        return CampaignView(campaign.id, campaign.type, campaign.user, campaign.submitted_at, waiting, demands)

    def _record(self, plan: Sequence[Assignment]) -> None:
        now = self.clock.now()
        with self.store.transaction():
            for assignment in plan:
                jobs = self.store.next_jobs(assignment.campaign_id, assignment.jobs)
                size = getattr(self.adapter(assignment.cluster), "max_batch", None) or len(jobs) or 1
                for start in range(0, len(jobs), size):  # RMs cap array sizes
                    chunk = [j[0] for j in jobs[start : start + size]]
                    self._fresh.add(self.store.create_batch(assignment.cluster, assignment.campaign_id, chunk, now))
                if jobs:
                    self.report.add("scheduled", len(jobs))
                    log.info(
                        "metasched: %d jobs of campaign %d for %s",
                        len(jobs),
                        assignment.campaign_id,
                        assignment.cluster,
                    )

    # ---- runner ---------------------------------------------------------------------------------

    def _settings(self, campaign_id: int) -> dict[str, dict]:
        """A campaign's settings per cluster (they never change after submission: read once per cycle),
        with the slots a job takes as "_slots"."""
        if campaign_id not in self._settings_cache:
            settings = {n: i["settings"] for n, i in self.store.campaign_clusters(campaign_id).items()}
            for value in settings.values():
                value["_slots"] = job_slots(value["resources"])
            self._settings_cache[campaign_id] = settings
        return self._settings_cache[campaign_id]

    def batch_key(self, *parts: object) -> str:
        return ".".join(["cigri", self.store.instance, *map(str, parts)])

    def runner(self) -> None:
        """Submit recorded batches, then due prologues and epilogues."""
        campaigns: dict[int, Campaign] = {}
        for batch_id, cluster, campaign_id in self.store.unfinished_batches():
            if campaign_id not in campaigns:
                campaigns[campaign_id] = self.store.campaign(campaign_id)
            self._submit_batch(batch_id, cluster, campaigns[campaign_id])
        for campaign_id, cluster, stage, state, previous in self.store.stages_in(("todo", "due")):
            if (stage, state) == ("prologue", "todo") or (stage, state) == ("epilogue", "due"):
                self._submit_stage(self.store.campaign(campaign_id), cluster, stage, previous)

    def _spec(
        self, campaign: Campaign, settings: dict, job_id: int, name: str, argv: list[str], walltime: int | None = None
    ) -> JobSpec:
        macros = {"{CAMPAIGN_ID}": str(campaign.id)}

        def expand(text: str) -> str:
            for key, value in macros.items():
                text = text.replace(key, value)
            return text

        slots = settings.get("_slots") or job_slots(settings["resources"])
        return JobSpec(
            job_id=job_id,
            campaign_id=campaign.id,
            name=name,
            argv=tuple(expand(a) for a in argv[:1]) + tuple(argv[1:]),
            directory=expand(settings["exec_directory"]),
            walltime=walltime or settings["walltime"],
            slots=slots,
            resources=settings["resources"],
            properties=settings.get("properties") or "",
            project=settings.get("project") or "",
            best_effort=settings.get("type") == "best-effort",
            user=campaign.user,
        )

    def _submit_batch(self, batch_id: int, cluster: str, campaign: Campaign) -> None:
        jobs = self.store.batch_jobs(batch_id)
        if not jobs:
            with self.store.transaction():
                self.store.finish_batch(batch_id, {}, self.clock.now())
            return
        settings = self._settings(campaign.id)[cluster]
        base = self._spec(campaign, settings, 0, "", [settings["exec_file"]])  # what the batch's jobs share
        shared = {f.name: getattr(base, f.name) for f in fields(JobSpec) if f.name not in ("job_id", "name", "argv")}
        specs = [
            JobSpec(job_id=job_id, name=name, argv=(*base.argv, *split_params(params, f"job {job_id}")), **shared)
            for job_id, name, params in jobs
        ]
        adapter = self.adapter(cluster)
        key = self.batch_key(campaign.id, "b", batch_id)
        self._watch(cluster)
        try:
            # only a batch an earlier (killed) pass recorded may already be on the cluster
            remote = None if batch_id in self._fresh else adapter.find_batch(key)
            if remote is None:
                remote = adapter.submit(key, specs)
        except SubmitError as exc:
            with self.store.transaction():
                self.store.abandon_batch(batch_id)
                self.store.open_event(
                    EventClass.CAMPAIGN,
                    EventCode.SUBMIT_ERROR,
                    str(exc),
                    self.clock.now(),
                    cluster=cluster,
                    campaign_id=campaign.id,
                )
            log.warning("runner: %s refused campaign %d: %s", cluster, campaign.id, exc)
            return
        except TransportError as exc:
            self._cluster_failed(cluster, exc)  # the batch stays recorded and is retried when the cluster answers
            return
        with self.store.transaction():
            self.store.finish_batch(
                batch_id, {job_id: rid for (job_id, _, _), rid in zip(jobs, remote, strict=False)}, self.clock.now()
            )
        self.report.add("submitted", len(jobs))
        log.info("runner: %d jobs of campaign %d submitted to %s", len(jobs), campaign.id, cluster)

    def _submit_stage(self, campaign: Campaign, cluster: str, stage: str, previous: str | None = None) -> None:
        if not self._cluster_usable(cluster):
            return
        settings = self._settings(campaign.id)[cluster]
        # shell lines run on the cluster: {HOME} is its $HOME there
        script = "\n".join(settings[stage]).replace("{CAMPAIGN_ID}", str(campaign.id)).replace("{HOME}", "$HOME")
        # in the home directory: a prologue typically creates the exec_directory
        spec = replace(
            self._spec(campaign, settings, 0, stage, ["/bin/sh", "-c", script], settings[f"{stage}_walltime"]),
            directory="{HOME}",
        )
        self._watch(cluster)
        try:
            key = self.batch_key(campaign.id, cluster, stage)
            retry = stage_retry(previous)
            if retry:  # a new attempt: not the batch of the previous one
                key += f".retry-{retry[0]}-{retry[1]}"
            remote = self.adapter(cluster).find_batch(key) or self.adapter(cluster).submit(key, [spec])
        except TransportError as exc:
            self._cluster_failed(cluster, exc)
            return
        except SubmitError as exc:
            with self.store.transaction():
                self.store.set_stage(campaign.id, cluster, stage, "failed")
                code = EventCode.PROLOGUE_ERROR if stage == "prologue" else EventCode.EPILOGUE_ERROR
                self.store.open_event(
                    EventClass.CAMPAIGN, code, str(exc), self.clock.now(), cluster=cluster, campaign_id=campaign.id
                )
            return
        with self.store.transaction():
            self.store.set_stage(campaign.id, cluster, stage, "submitted", f"{remote[0]}#{retry[0] if retry else 0}")
        log.info("runner: %s of campaign %d submitted to %s", stage, campaign.id, cluster)

    # ---- nikita ---------------------------------------------------------------------------------

    def nikita(self) -> None:
        """Kill the jobs users cancelled."""
        per_cluster: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for job_id, _, cluster, state, remote in self.store.jobs_to_kill():
            if state == JobState.LAUNCHING.value or remote is None:
                continue  # still being submitted: killed next pass, once it has a remote id
            per_cluster[cluster].append((job_id, remote))
        for cluster, jobs in per_cluster.items():
            if not self._cluster_usable(cluster):
                continue
            try:
                self.adapter(cluster).cancel([remote for _, remote in jobs])
            except TransportError as exc:
                self._cluster_failed(cluster, exc)
                continue
            ids = [job_id for job_id, _ in jobs]
            with self.store.transaction():
                self.store.set_job_state(ids, JobState.CANCELLED, only_from=(JobState.SUBMITTED, JobState.RUNNING))
                self.store.clear_kill(ids)
            self.report.add("killed", len(ids))
            log.info("nikita: %d jobs killed on %s", len(ids), cluster)


def job_slots(resources: str) -> int:
    """The slots (cores) one job takes: its nodes times the cores it asks on each."""
    nodes, per_node = resource_slots(parse_resources(resources, "resources"))
    return nodes * per_node


@contextmanager
def exclusive(store: Store):
    """Hold the almighty lock of this state file: two passes never overlap."""
    path = store.directory / "almighty.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another almighty pass holds {path}; try again later") from None
        yield
    finally:
        os.close(fd)
