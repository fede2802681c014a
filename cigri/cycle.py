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
from .calls import Bounded
from .clock import Clock
from .errors import AdapterError, Busy, SubmitError
from .jdl import parse_resources, resource_slots, split_params
from .model import (
    Campaign,
    CampaignState,
    CampaignType,
    Capacity,
    EventClass,
    EventCode,
    JobSpec,
    JobState,
    RemoteState,
)
from .prediction import Predictor, Sample, predictor
from .scheduling import Assignment, CampaignView, ClusterView, Demand, MetaScheduler, Snapshot, decide, metascheduler
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


@dataclass(frozen=True)
class Patience:
    """How long the cycle lets jobs wait where they are before it places them elsewhere, in seconds. The
    defaults (the README's) suit a real grid: a queue that moves keeps its jobs, one that does not loses them."""

    queue_grace: float = 300  # cigri's queued jobs not starting this long: no queue allowance there
    queue_wait: float = 1800  # a job pending longer is taken back when another cluster could start it now
    avoid: float = 3600  # a job killed or taken back by a cluster is not sent there again for this long
    unreachable: float = 3600  # the jobs of a cluster unreachable this long run again elsewhere


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
        patience: Patience = Patience(),
    ):
        self.store = store
        self.clock = clock
        self.patience = patience
        self.scheduler = scheduler or metascheduler()
        self.forecaster = forecaster or predictor()
        self._adapters: dict[str, Bounded] = {}  # every call into an adapter goes through cigri.calls
        self._factory = adapters or self._default_factory
        self.report = PassReport()
        self._seen: dict[str, object] = {}  # each cluster's activity token when cigri last looked
        self._fresh: set[int] = set()  # batches recorded by this pass: no RM can hold them yet
        self._avoided: dict[tuple[int, str], int] = {}  # this pass: jobs of (campaign, cluster) avoiding it
        self._choosy: set[int] = set()  # campaigns with more than one place this pass: their jobs avoid clusters
        self._settings_cache: dict[int, dict[str, dict]] = {}

    def _default_factory(self, name: str) -> ResourceManager:
        return adapter_for(self.store.cluster(name), AdapterContext(self.store.directory, self.clock))

    def adapter(self, name: str) -> Bounded:
        if name not in self._adapters:
            self._adapters[name] = Bounded(name, self._factory)
        return self._adapters[name]

    def close(self) -> None:
        for adapter in self._adapters.values():
            adapter.close()
        self._adapters.clear()

    # ---- the pass -------------------------------------------------------------------------------

    def run(self, stages: Sequence[str] = STAGES) -> PassReport:
        self.report = PassReport()
        self._fresh.clear()
        for adapter in self._adapters.values():
            adapter.reopen()
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
        """Has a cluster changed since cigri last read it? (lets a looping almighty wake before its period;
        a cluster that fails to answer is no news: the next pass meets the failure and reports it)"""
        watched = [name for name, token in self._seen.items() if token is not None]
        tokens = self._gather(watched, "activity", report=False)
        return any(token != self._seen[name] for name, token in tokens.items())

    # ---- cluster health -------------------------------------------------------------------------

    def _gather(self, names: Sequence[str], method: str, *args: object, report: bool = True) -> dict[str, object]:
        """``method(*args)`` of each cluster, asked concurrently; the answers of those that gave one, in the
        order of ``names``. The others are closed for the pass (and reported, with ``report``)."""
        pending = {}
        for name in names:
            try:
                pending[name] = self.adapter(name).start(method, *args)
            except AdapterError as exc:
                if report:
                    self._cluster_failed(name, exc)
        answers = {}
        for name, call in pending.items():
            try:
                answers[name] = call.result()
            except AdapterError as exc:
                if report:
                    self._cluster_failed(name, exc)
        return answers

    def _cluster_failed(self, cluster: str, exc: AdapterError) -> None:
        """Whatever went wrong, the cluster is closed for the pass, with an event from its first failing pass."""
        self.adapter(cluster).fail(exc)
        if self.store.open_cluster_event(cluster) is None:
            with self.store.transaction():
                self.store.open_event(
                    EventClass.CLUSTER, EventCode.CLUSTER_UNREACHABLE, str(exc), self.clock.now(), cluster=cluster
                )
            log.warning("cluster %s: %s (no new jobs until it answers)", cluster, exc)

    def _usable(self, names: Sequence[str]) -> list[str]:
        """The clusters open for this pass: not failed in it, and with no open cluster event or answering
        again (those are asked concurrently; an answer closes the event)."""
        names = [name for name in names if self.adapter(name).failure is None]
        events = {name: event for name in names if (event := self.store.open_cluster_event(name))}
        answered = self._gather(list(events), "capacity", report=False)
        for name in answered:
            with self.store.transaction():
                self.store.close_events([events[name].id], self.clock.now())
            log.info("cluster %s answers again: event %d closed", name, events[name].id)
        return [name for name in names if name not in events or name in answered]

    def _cluster_usable(self, cluster: str) -> bool:
        return bool(self._usable([cluster]))

    # ---- updator --------------------------------------------------------------------------------

    def updator(self) -> None:
        """Collect job states from each cluster (one bulk query each) and settle campaigns."""
        names = [cluster.name for cluster in self.store.clusters()]
        usable = self._usable(names)
        for name in names:
            if name not in usable:
                self._rerun_elsewhere(name)
        for name in usable:  # the bulk query of each cluster runs while the others are asked
            if self.adapter(name).concurrent() and (active := self.store.active_jobs(name)):
                self.adapter(name).ahead("states", [remote for _, _, _, remote, _ in active])
        for name in usable:
            try:
                self._collect(name)
                self._collect_stages(name)
            except AdapterError as exc:
                self._cluster_failed(name, exc)
        self._settle_campaigns()

    def _rerun_elsewhere(self, cluster: str) -> None:
        """The jobs of a cluster unreachable for too long go back to their campaigns' bags (no resubmission
        counted: they did nothing wrong). Their copies there are cancelled once it answers, unread: each job's
        result is the one of the copy cigri still follows."""
        event = self.store.open_cluster_event(cluster)
        now = self.clock.now()
        if event is None or now - event.created_at < self.patience.unreachable:
            return
        jobs = self.store.cluster_jobs(cluster)
        if not jobs:
            return
        remote_ids = [remote for _, remote, _, _ in jobs if remote is not None]
        # a batch still being submitted may have reached the RM: found by its key when the cluster answers
        batches = {(campaign, batch) for _, remote, batch, campaign in jobs if remote is None and batch is not None}
        with self.store.transaction():
            self.store.add_orphans(cluster, remote_ids, [self.batch_key(c, "b", b) for c, b in sorted(batches)])
            self.store.requeue([job_id for job_id, *_ in jobs], count_resubmit=False, avoid=self._avoiding(cluster))
        self.report.add("rerun elsewhere", len(jobs))
        log.warning("updator: %s unreachable since %s: its %d jobs run elsewhere", cluster, event.created_at, len(jobs))

    def _avoiding(self, cluster: str) -> tuple[str, float]:
        """A job the cluster killed or held back is not sent there again for a while."""
        return cluster, self.clock.now() + self.patience.avoid

    def _collect(self, cluster: str) -> None:
        active = self.store.active_jobs(cluster)
        if not active:
            return
        adapter = self.adapter(cluster)
        self._look(cluster)
        statuses = adapter.states([remote for _, _, _, remote, _ in active])
        now = self.clock.now()
        started, ended, requeue, failed, durations = [], [], [], [], []
        unknown, known_again, avoid = [], [], set()
        began = False  # did one of cigri's queued jobs start there (its queue moves)
        for job_id, campaign_id, state, remote, unknown_since in active:
            status = statuses.get(remote)
            if status is not None and status.state == RemoteState.UNKNOWN:
                if unknown_since is None:
                    unknown.append(job_id)
                elif now - unknown_since > LOST_AFTER:  # never assumed done: taken as lost, run again
                    requeue.append((job_id, campaign_id, f"unknown to {cluster} for {LOST_AFTER // 60} minutes"))
                    avoid.add(job_id)
                continue
            if unknown_since is not None and status is not None:
                known_again.append(job_id)
            if status is None or status.state == RemoteState.PENDING:
                continue
            if state == JobState.SUBMITTED.value and (
                status.state == RemoteState.RUNNING or status.started_at is not None
            ):
                began = True
            if status.state == RemoteState.RUNNING:
                if state == JobState.SUBMITTED.value:
                    started.append((job_id, now if status.started_at is None else status.started_at))
                continue
            # a start or an end at t=0.0 (a simulation's first second) is a time, not "none"
            start, end = status.started_at, now if status.ended_at is None else status.ended_at
            if status.state == RemoteState.KILLED or status.exit_code in RESUBMIT_EXIT:
                requeue.append((job_id, campaign_id, status.reason or f"exit status {status.exit_code}"))
                if status.state == RemoteState.KILLED:  # preempted, walltime: not straight back there
                    avoid.add(job_id)
            elif status.exit_code == 0:
                ended.append((job_id, JobState.TERMINATED, 0, start, end))
                durations.append((campaign_id, max(0.0, end - (end if start is None else start))))
            else:
                ended.append((job_id, JobState.EVENT, status.exit_code, start, end))
                how = f"exited with status {status.exit_code}" if status.exit_code is not None else status.reason
                failed.append((job_id, campaign_id, remote, how))
        tails = {job_id: adapter.tail(remote, "stderr", STDERR_LINES) for job_id, _, remote, _ in failed}
        counts = self.store.resubmit_counts([job_id for job_id, _, _ in requeue]) if requeue else {}
        with self.store.transaction():
            if began:
                self.store.set_last_start(cluster, now)
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
            self.store.requeue([job_id for job_id in again if job_id not in avoid])
            self.store.requeue([job_id for job_id in again if job_id in avoid], avoid=self._avoiding(cluster))
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
        # a test that could not start on a cluster ends there: that event informs, it does not hold the campaign
        open_events = self.store.open_event_counts(ignore=(EventCode.TEST_NOT_STARTED,))
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
        budgets: list[ClusterView] = []
        for name, capacity in self._capacities(self._usable([c.name for c in self.store.clusters()])).items():
            launching = self.store.active_count(name).get(JobState.LAUNCHING.value, 0)
            depth = 0 if self._queue_stalled(name) else getattr(self.adapter(name), "queue_depth", 0)
            free = max(0, capacity.free - capacity.queued - launching)
            queue = max(0, depth - max(0, capacity.queued + launching - capacity.free))
            budgets.append(ClusterView(name, free, queue))
        self._take_back(campaigns, budgets)
        self._recall()
        self._avoided = self.store.avoided(self.clock.now())
        views = [view for c in campaigns if (view := self._campaign_view(c, {b.name for b in budgets}))]
        decision = decide(self.scheduler, Snapshot(self.clock.now(), tuple(budgets), tuple(views)), {})
        self._record(decision.launches)

    def _queue_stalled(self, cluster: str) -> bool:
        """Do cigri's jobs queued on the cluster not start? Either none started since the oldest was queued
        (plus a grace), or jobs were taken back from there and none started since: queueing more there would
        park them."""
        last_start, last_recall = self.store.cluster_flow(cluster)
        if last_recall is not None and (last_start is None or last_start < last_recall):
            return True
        oldest = self.store.oldest_queued(cluster)
        if oldest is None or self.clock.now() - oldest < self.patience.queue_grace:
            return False
        return last_start is None or last_start < oldest

    def _places(self, campaign: Campaign, usable: set[str]) -> dict[str, dict]:
        """The clusters where the campaign may send jobs now, with their progress."""
        blocked = self.store.blocked_clusters(campaign.id)
        return {
            name: info
            for name, info in self.store.campaign_clusters(campaign.id, settings=False).items()
            if name in usable and name not in blocked and info["prologue_state"] in ("none", "done")
        }

    def _take_back(self, campaigns: Sequence[Campaign], budgets: Sequence[ClusterView]) -> None:
        """Jobs pending past the queue wait. A test job ends its campaign's test on that cluster, with an event
        naming it; another job is taken back when a cluster of its campaign has a free slot for it now (it
        then avoids the cluster it waited on). Recorded here; :meth:`_recall` asks the RMs."""
        now = self.clock.now()
        free = {b.name: b.free for b in budgets}
        by_id = {c.id: c for c in campaigns}  # running campaigns: a paused one's jobs stay where they are
        places: dict[int, dict[str, dict]] = {}
        for cluster in free:
            recall, stalled_tests = [], []
            for job_id, campaign_id in self.store.overdue_jobs(cluster, now - self.patience.queue_wait):
                campaign = by_id.get(campaign_id)
                if campaign is None:
                    continue
                if campaign.type == CampaignType.TEST:
                    stalled_tests.append((job_id, campaign_id))
                    continue
                settings = self._settings(campaign_id)
                if campaign_id not in places:
                    places[campaign_id] = self._places(campaign, set(free))
                elsewhere = next(
                    (
                        name
                        for name in places[campaign_id]
                        if name != cluster and free[name] >= settings[name]["_slots"]
                    ),
                    None,
                )
                if elsewhere is not None:
                    free[elsewhere] -= settings[elsewhere]["_slots"]
                    recall.append(job_id)
            if not recall and not stalled_tests:
                continue
            with self.store.transaction():
                self.store.request_recall(recall + [job_id for job_id, _ in stalled_tests], cluster, now)
                for job_id, campaign_id in stalled_tests:
                    self.store.open_event(
                        EventClass.CAMPAIGN,
                        EventCode.TEST_NOT_STARTED,
                        f"test job {job_id} did not start on {cluster} within {self.patience.queue_wait:g} s: "
                        f"the test ends there",
                        now,
                        cluster=cluster,
                        campaign_id=campaign_id,
                        job_id=job_id,
                    )
            log.info("metasched: %s: %d pending jobs taken back", cluster, len(recall) + len(stalled_tests))

    def _recall(self) -> None:
        """Cancel on their RMs the pending jobs recorded to be taken back, and return them to their bags,
        neither a failure nor a resubmission. One that started meanwhile stays where it runs."""
        per_cluster: dict[str, list[tuple[int, str]]] = defaultdict(list)
        started = []
        for job_id, cluster, state, remote in self.store.jobs_to_recall():
            if state == JobState.SUBMITTED.value and remote is not None:
                per_cluster[cluster].append((job_id, remote))
            else:
                started.append(job_id)
        if started:
            with self.store.transaction():
                self.store.clear_recall(started)

        def taken_back(cluster: str, ids: list[int]) -> None:
            self.store.clear_recall(ids)
            self.store.requeue(ids, count_resubmit=False, avoid=self._avoiding(cluster))
            self.report.add("taken back", len(ids))

        self._cancel_each(per_cluster, taken_back)

    def _cancel_each(
        self, per_cluster: dict[str, list[tuple[int, str]]], record: Callable[[str, list[int]], None]
    ) -> None:
        """Cancel (job, remote id) pairs cluster by cluster, then ``record`` each cluster's jobs in a
        transaction. A cluster that does not answer keeps its jobs for a later pass."""
        for cluster, jobs in per_cluster.items():
            if not self._cluster_usable(cluster):
                continue
            try:
                self.adapter(cluster).cancel([remote for _, remote in jobs])
            except AdapterError as exc:
                self._cluster_failed(cluster, exc)
                continue
            with self.store.transaction():
                record(cluster, [job_id for job_id, _ in jobs])

    def _capacities(self, names: Sequence[str]) -> dict[str, Capacity]:
        """The capacity of each cluster that answers, asked of all concurrently."""
        return self._gather(names, "capacity")  # type: ignore[return-value]

    def _campaign_view(self, campaign: Campaign, usable: set[str]) -> CampaignView | None:
        waiting = self.store.counts(campaign.id)[JobState.TO_LAUNCH]
        if not waiting:
            return None
        demands = {}
        active = None
        places = self._places(campaign, usable)
        if len(places) > 1:  # a job killed or taken back by a cluster goes elsewhere, when there is an elsewhere
            self._choosy.add(campaign.id)
        else:
            self._choosy.discard(campaign.id)
        for name, info in places.items():
            settings = self._settings(campaign.id)[name]
            slots = settings["_slots"]
            limit = waiting
            if campaign.id in self._choosy:
                limit -= self._avoided.get((campaign.id, name), 0)
            if campaign.type == CampaignType.TEST:
                limit = min(limit, 0 if info["launched"] else 1)
            if settings.get("max_jobs"):
                if active is None:
                    active = {n: self.store.active_by_campaign(n).get(campaign.id, 0) for n in places}
                limit = min(limit, settings["max_jobs"] - active[name])
            if limit > 0:
                demands[name] = Demand(slots, limit)
        return CampaignView(campaign.id, campaign.type, campaign.user, campaign.submitted_at, waiting, demands)

    def _record(self, plan: Sequence[Assignment]) -> None:
        now = self.clock.now()
        with self.store.transaction():
            for assignment in plan:
                avoiding = (assignment.cluster, now) if assignment.campaign_id in self._choosy else None
                jobs = self.store.next_jobs(assignment.campaign_id, assignment.jobs, avoiding)
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
            env=settings.get("environment") or {},
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
        try:
            self._watch(cluster)
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
        except AdapterError as exc:
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
        try:
            self._watch(cluster)
            key = self.batch_key(campaign.id, cluster, stage)
            retry = stage_retry(previous)
            if retry:  # a new attempt: not the batch of the previous one
                key += f".retry-{retry[0]}-{retry[1]}"
            remote = self.adapter(cluster).find_batch(key) or self.adapter(cluster).submit(key, [spec])
        except SubmitError as exc:
            with self.store.transaction():
                self.store.set_stage(campaign.id, cluster, stage, "failed")
                code = EventCode.PROLOGUE_ERROR if stage == "prologue" else EventCode.EPILOGUE_ERROR
                self.store.open_event(
                    EventClass.CAMPAIGN, code, str(exc), self.clock.now(), cluster=cluster, campaign_id=campaign.id
                )
            return
        except AdapterError as exc:
            self._cluster_failed(cluster, exc)
            return
        with self.store.transaction():
            self.store.set_stage(campaign.id, cluster, stage, "submitted", f"{remote[0]}#{retry[0] if retry else 0}")
        log.info("runner: %s of campaign %d submitted to %s", stage, campaign.id, cluster)

    # ---- nikita ---------------------------------------------------------------------------------

    def nikita(self) -> None:
        """Kill the jobs users cancelled and the copies left on a cluster that was unreachable; hold paused
        campaigns' queued jobs, release resumed ones."""
        self._cancel_orphans()
        per_cluster: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for job_id, _, cluster, state, remote in self.store.jobs_to_kill():
            if state == JobState.LAUNCHING.value or remote is None:
                continue  # still being submitted: killed next pass, once it has a remote id
            per_cluster[cluster].append((job_id, remote))

        def killed(cluster: str, ids: list[int]) -> None:
            self.store.set_job_state(ids, JobState.CANCELLED, only_from=(JobState.SUBMITTED, JobState.RUNNING))
            self.store.clear_kill(ids)
            self.report.add("killed", len(ids))
            log.info("nikita: %d jobs killed on %s", len(ids), cluster)

        self._cancel_each(per_cluster, killed)
        self._hold_paused()

    def _cancel_orphans(self) -> None:
        """Cancel, on the clusters that answer again, the copies of jobs that ran again elsewhere."""
        per_cluster: dict[str, list[tuple[int, str | None, str | None]]] = defaultdict(list)
        for orphan_id, cluster, remote, key in self.store.orphans():
            per_cluster[cluster].append((orphan_id, remote, key))
        for cluster, orphans in per_cluster.items():
            if not self._cluster_usable(cluster):
                continue
            adapter = self.adapter(cluster)
            try:
                remote_ids = [remote for _, remote, _ in orphans if remote is not None]
                for _, _, key in orphans:
                    remote_ids.extend((adapter.find_batch(key) or []) if key is not None else [])
                if remote_ids:
                    adapter.cancel(remote_ids)
            except AdapterError as exc:
                self._cluster_failed(cluster, exc)
                continue
            with self.store.transaction():
                self.store.drop_orphans([orphan_id for orphan_id, _, _ in orphans])
            log.info("nikita: %d copies of jobs that ran elsewhere cancelled on %s", len(remote_ids), cluster)

    def _hold_paused(self) -> None:
        """Hold paused campaigns' queued jobs on their RM, release those of resumed campaigns.

        A hold is recorded as asked before the RM call and as done after it, a release is recorded after
        it: a pass killed in between leaves the job to be asked again (both calls are idempotent), never
        held on a cluster with nothing in cigri's state to release it."""
        to_hold: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for job_id, cluster, remote in self.store.jobs_to_hold():
            to_hold[cluster].append((job_id, remote))
        to_release: dict[str, list[tuple[int, str]]] = defaultdict(list)
        gone = []  # no longer queued or running: nothing left to release on the RM
        for job_id, cluster, state, remote in self.store.jobs_to_release():
            if state in (JobState.SUBMITTED.value, JobState.RUNNING.value) and remote is not None:
                to_release[cluster].append((job_id, remote))
            else:
                gone.append(job_id)
        if gone:
            with self.store.transaction():
                self.store.set_hold(gone, Store.HOLD_NONE)
        for cluster, jobs in to_hold.items():
            self._hold_on(cluster, jobs, hold=True)
        for cluster, jobs in to_release.items():
            self._hold_on(cluster, jobs, hold=False)

    def _hold_on(self, cluster: str, jobs: list[tuple[int, str]], *, hold: bool) -> None:
        """Hold or release jobs on one cluster; a cluster that fails gets an event and is asked next pass."""
        if not self._cluster_usable(cluster):
            return
        ids = [job_id for job_id, _ in jobs]
        if hold:
            with self.store.transaction():
                self.store.set_hold(ids, Store.HOLD_ASKED)
        adapter = self.adapter(cluster)
        try:
            (adapter.hold if hold else adapter.release)([remote for _, remote in jobs])
        except AdapterError as exc:
            self._cluster_failed(cluster, exc)
            return
        with self.store.transaction():
            self.store.set_hold(ids, Store.HOLD_DONE if hold else Store.HOLD_NONE)
        what = "held" if hold else "released"
        self.report.add(what, len(ids))
        log.info("nikita: %d jobs %s on %s", len(ids), what, cluster)


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
