"""What users do to campaigns: submit, add jobs, cancel, pause, resume, fix events.

Each operation is one transaction: it happens whole or not at all.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from . import config, macros, staging
from . import events as event_rules
from .adapters import AdapterContext, adapter_for, job_id_variable
from .adapters.files import NO_FILE_PATH, can_move_files
from .adapters.local_rm import Spool, out_path
from .clock import Clock, RealClock
from .errors import CigriError, JdlError, NotFound, PermissionDenied
from .jdl import Jdl, job_blocks
from .model import Campaign, CampaignState, CampaignType, EventClass, EventCode, EventState, JobState
from .secrets import mask
from .stages import RETRY, stage_remote
from .store import Store
from .wording import counted

# events that pause their campaign: fixing one, or resuming the campaign, lifts the pause
PAUSING = (EventCode.FAILURE_RATE, EventCode.INPUT_CHANGED)


def current_user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def check_owner(campaign: Campaign, user: str) -> None:
    if campaign.user != user and user != "root":
        raise PermissionDenied(f"campaign {campaign.id} belongs to {campaign.user}, not {user}")


def known_clusters(store: Store, jdl: Jdl) -> tuple[Jdl, list[str]]:
    """CiGri's way with the clusters a campaign names: those the state does not know are left out, each with a
    warning (returned, for the caller to show); a campaign naming no known cluster is refused (JdlError)."""
    unknown = [name for name in jdl.clusters if not store.has_cluster(name)]
    if not unknown:
        return jdl, []
    known = ", ".join(c.name for c in store.clusters())
    if len(unknown) == len(jdl.clusters) == 1:
        raise JdlError(f"clusters.{unknown[0]}", f"unknown cluster (known: {known}; add one with gridclusters add)")
    if len(unknown) == len(jdl.clusters):
        raise JdlError(
            "clusters",
            f"no cluster the campaign names is known ({', '.join(unknown)}; known: {known}; add one with "
            "gridclusters add)",
        )
    kept = {name: settings for name, settings in jdl.clusters.items() if name not in unknown}
    warnings = [f"clusters.{name}: unknown cluster, left out (known: {known})" for name in unknown]
    return replace(jdl, clusters=kept), warnings


def check_clusters(
    store: Store, jdl: Jdl, clock: Clock, adapters: Callable[[str], object] | None = None
) -> dict[str, str]:
    """Every cluster the JDL names exists (:func:`known_clusters` leaves out those that do not, as CiGri did),
    and can honour the settings given for it. ``adapters`` gives live adapters by cluster name (the
    simulator's); by default each is built from its configuration. A campaign with input or output files does
    not use the clusters that cannot move files (REST): returned, each with why; when none of its clusters
    can, it is refused."""
    moves_files = bool(jdl.input_files or jdl.output_files)
    without_files: dict[str, str] = {}
    for name, settings in jdl.clusters.items():
        if not store.has_cluster(name):
            known = ", ".join(c.name for c in store.clusters())
            raise JdlError(f"clusters.{name}", f"unknown cluster (known: {known}; add one with gridclusters add)")
        adapter = (
            adapters(name)
            if adapters is not None
            else adapter_for(store.cluster(name), AdapterContext(store.directory, clock))
        )
        try:
            adapter.check(settings, f"clusters.{name}")
            if settings.get("cluster_job_type") and not getattr(adapter, "job_types", False):
                raise JdlError(
                    f"clusters.{name}.cluster_job_type",
                    f"cluster {name!r} ({store.cluster(name).adapter}) has no job types (OAR's -t): leave "
                    "cluster_job_type out for it",
                )
            if moves_files and not can_move_files(adapter):
                without_files[name] = NO_FILE_PATH
        finally:
            if adapters is None:
                adapter.close()
    if without_files and len(without_files) == len(jdl.clusters):
        name = next(iter(without_files))
        raise JdlError(f"clusters.{name}", without_files[name])
    return without_files


def preview(store: Store, jdl: Jdl, clock: Clock) -> dict[str, dict]:
    """For gridsub's dry run: what each cluster will run (exec_file, exec_directory, prologue, epilogue), the
    home's macros expanded with the cluster's home as its adapter knows it (read through ssh for the ssh
    adapters; ``$HOME`` where it cannot tell now) and ``{OAR_JOB_ID}`` as the RM's variable. ``{CAMPAIGN_ID}``
    stays: the campaign has no id yet."""
    out = {}
    for name, settings in jdl.clusters.items():
        cluster = store.cluster(name)
        adapter = adapter_for(cluster, AdapterContext(store.directory, clock))
        try:
            home = _home_of(adapter)
        finally:
            adapter.close()
        variable = job_id_variable(cluster.adapter)

        def stage(lines: list[str], home: str = home, variable: str = variable) -> list[str]:
            script = macros.stage_script(lines, "{CAMPAIGN_ID}", variable)
            return [macros.expand_home(line, home) for line in script.split("\n")] if lines else []

        out[name] = {
            "exec_file": macros.expand_home(settings["exec_file"], home),
            "exec_directory": macros.expand_home(settings["exec_directory"], home),
            "prologue": stage(settings["prologue"]),
            "epilogue": stage(settings["epilogue"]),
        }
    return out


def _home_of(adapter) -> str:
    """The cluster's home as its adapter knows it, or ``$HOME`` (its shell's) when it cannot tell now."""
    try:
        home = adapter.home
    except (AttributeError, CigriError):
        return "$HOME"
    return home if isinstance(home, str) and home else "$HOME"


def submit(
    store: Store,
    jdl: Jdl,
    clock: Clock,
    *,
    user: str | None = None,
    adapters: Callable[[str], object] | None = None,
) -> tuple[int, int]:
    """Record a campaign and its jobs once the admission rules let ``user`` submit it (:func:`admit`);
    return (campaign id, number of jobs)."""
    user = user or current_user()
    unused = check_clusters(store, jdl, clock, adapters)
    kind = CampaignType.TEST if jdl.test_mode else CampaignType.DEFAULT
    with store.transaction():
        campaign_id = store.create_campaign(jdl.name, user, kind, mask(jdl.as_record()), jdl.clusters, clock.now())
        for cluster, why in unused.items():  # an open campaign event keeps the campaign off the cluster
            store.open_event(
                EventClass.CAMPAIGN, EventCode.SUBMIT_ERROR, why, clock.now(), cluster=cluster, campaign_id=campaign_id
            )
        with store.campaign_names() as names:
            count = store.add_jobs(campaign_id, job_blocks(jdl, names))
        admit(store, store.campaign(campaign_id))  # before reading input files: a refusal reads none
        if jdl.input_files:
            staging.register(store, campaign_id, jdl.data_source, jdl.input_files)
        if jdl.output_files:
            store.gather_outputs_of(campaign_id)
    return campaign_id, count


def admit(store: Store, campaign: Campaign) -> None:
    """The admission rules of the configuration (issue 14, item 2), checked on a campaign just recorded with
    its jobs, inside the transaction that recorded them: a refusal (PermissionDenied naming the rule) rolls
    it all back. ``clusters.CLUSTER.users``: who may name the cluster; ``admission.jobs_per_campaign``;
    ``admission.test_jobs`` (a test campaign's jobs); ``admission.jobs_per_user`` (the user's unfinished
    jobs, these included)."""
    settings = store.settings()
    for cluster in campaign.jdl.get("clusters", {}):
        users = config.cluster_users(settings, cluster)
        if users is not None and campaign.user not in users:
            rule = config.cluster_key(cluster, "users")
            raise PermissionDenied(f"refused by {rule}: {campaign.user} may not submit to {cluster}")
    jobs = store.campaign_jobs(campaign.id)
    rules = [("admission.jobs_per_campaign", jobs, "the campaign has")]
    if campaign.type is CampaignType.TEST:
        rules.append(("admission.test_jobs", jobs, "the test campaign has"))
    rules.append(("admission.jobs_per_user", store.user_jobs(campaign.user), f"{campaign.user} would have"))
    for key, count, who in rules:
        limit = config.limit(settings, key)
        if limit is not None and count > limit:
            raise PermissionDenied(f"refused by {key} ({limit}): {who} {counted(count, 'job')}")


def add_jobs(store: Store, campaign_id: int, jdl: Jdl, *, user: str | None = None) -> int:
    """Append the jobs of ``jdl``'s param source to an existing campaign. A terminated one is in treatment
    again, as CiGri puts it (:func:`_reopen`); a cancelled one takes no more."""
    campaign = store.campaign(campaign_id)
    check_owner(campaign, user or current_user())
    if campaign.state == CampaignState.CANCELLED:
        raise CigriError(f"campaign {campaign_id} is {campaign.state.value}: jobs can no longer be added")
    return _append(store, campaign, jdl)


def _append(store: Store, campaign: Campaign, jdl: Jdl) -> int:
    """Add the jobs of ``jdl``'s param source to the campaign, in one transaction (a terminated campaign that
    gets some is in treatment again)."""
    record = campaign.jdl
    with store.transaction():
        last = store.last_job_id(campaign.id)
        with store.campaign_names(campaign.id) as names:
            count = store.add_jobs(campaign.id, job_blocks(jdl, names))
        if count and campaign.state == CampaignState.TERMINATED:
            _reopen(store, campaign.id)
        admit(store, campaign)
        if record.get("input_files"):  # the new jobs read their files as the campaign's others do
            staging.register(store, campaign.id, Path(record["data_source"]), tuple(record["input_files"]), last)
        return count


def add_generated(store: Store, campaign: Campaign, lines: list[str]) -> int:
    """Append the jobs a campaign's ``work_generator`` answered (param lines, as in a param_file), as
    :func:`add_jobs` does, input files included, in one transaction: a bad line, a name already used or an
    input file missing from the data_source adds nothing (JdlError)."""
    return _append(store, campaign, Jdl(name=campaign.name, clusters={}, params=tuple(lines)))


def _owned(store: Store, campaign_id: int, user: str | None) -> Campaign:
    campaign = store.campaign(campaign_id)
    check_owner(campaign, user or current_user())
    return campaign


def cancel(store: Store, campaign_id: int, clock: Clock, *, user: str | None = None) -> int:
    """Cancel a campaign: waiting jobs are dropped, active ones are killed by nikita. Return how many to kill."""
    campaign = _owned(store, campaign_id, user)
    if campaign.state in (CampaignState.TERMINATED, CampaignState.CANCELLED):
        raise CigriError(f"campaign {campaign_id} is already {campaign.state.value}")
    with store.transaction():
        store.set_campaign_state(campaign_id, CampaignState.CANCELLED, clock.now())
        store.drop_waiting(campaign_id, JobState.CANCELLED)
        to_kill = store.request_kill(campaign_id=campaign_id)
        store.close_events([e.id for e in store.events(campaign_id=campaign_id)], clock.now(), "campaign cancelled")
    return to_kill


def pause(store: Store, campaign_id: int, *, user: str | None = None) -> None:
    campaign = _owned(store, campaign_id, user)
    if campaign.state != CampaignState.IN_TREATMENT:
        raise CigriError(f"campaign {campaign_id} is {campaign.state.value}, not running: cannot pause")
    with store.transaction():
        store.set_campaign_state(campaign_id, CampaignState.PAUSED)


def resume(store: Store, campaign_id: int, *, user: str | None = None, clock: Clock | None = None) -> None:
    """A paused campaign runs again; a FAILURE_RATE or INPUT_CHANGED event that paused it is closed (at
    ``clock``'s time, the real one by default)."""
    campaign = _owned(store, campaign_id, user)
    if campaign.state != CampaignState.PAUSED:
        raise CigriError(f"campaign {campaign_id} is {campaign.state.value}, not paused: cannot resume")
    with store.transaction():
        store.set_campaign_state(campaign_id, CampaignState.IN_TREATMENT)
        # the pause it lifts, when its failure rate paused it, is over
        paused = [e.id for e in store.events(campaign_id=campaign_id) if e.code in PAUSING]
        store.close_events(paused, (clock or RealClock()).now())


def cancel_job(store: Store, job_id: int, *, user: str | None = None) -> str:
    """Cancel one job; return what happened to it."""
    job = store.job(job_id)
    _owned(store, job.campaign_id, user)
    with store.transaction():
        if job.state in (JobState.TO_LAUNCH, JobState.EVENT):
            store.set_job_state([job_id], JobState.CANCELLED, only_from=(job.state,))
            return "cancelled"
        if job.state.active:
            store.request_kill(job_id=job_id)
            return "will be killed by the next pass"
    raise CigriError(f"job {job_id} is {job.state.value}: nothing to cancel")


@dataclass(frozen=True)
class Leftovers:
    """What purged campaigns left in the state directory: per local cluster's spool, the ids its jobs had
    there (their rows in its rm.db, their stdout and stderr files)."""

    spools: dict[Path, list[int]]

    def remove(self) -> None:
        """Delete them; called once the purge has committed (a rollback leaves every file in place)."""
        for directory, ids in self.spools.items():
            for job_id in ids:
                for stream in ("stdout", "stderr"):
                    out_path(directory, job_id, stream).unlink(missing_ok=True)
            if (directory / "rm.db").exists():  # never create a spool to empty it
                spool = Spool(directory)
                try:
                    spool.forget(ids)
                finally:
                    spool.close()


def purge(store: Store, campaign_ids: list[int], *, user: str | None = None) -> Leftovers:
    """Forget ended campaigns (terminated or cancelled), owner-checked, all in one transaction: every row
    about them, jobs included. Return what they left in the state directory, for the caller to remove once
    this has committed. CiGri's ``griddel --purge`` never could succeed; a running or paused campaign is
    refused."""
    spools: dict[Path, list[int]] = {}
    with store.transaction():
        for campaign_id in campaign_ids:
            campaign = _owned(store, campaign_id, user)
            if campaign.state not in (CampaignState.TERMINATED, CampaignState.CANCELLED):
                raise CigriError(
                    f"campaign {campaign_id} is still running ({campaign.state.value}): "
                    "cancel it (griddel ID) before purging it"
                )
            for cluster, remote_id in store.purge_campaign(campaign_id):
                if store.cluster_of_outputs(cluster).adapter == "local":
                    spools.setdefault(store.directory / "clusters" / cluster, []).append(int(remote_id))
    return Leftovers(spools)


@dataclass(frozen=True)
class FixResult:
    closed: int
    resubmitted: int


def fix_events(
    store: Store,
    clock: Clock,
    *,
    campaign_id: int | None = None,
    event_id: int | None = None,
    code: EventCode | None = None,
    resubmit: bool = False,
    user: str | None = None,
) -> FixResult:
    """Close open events (of a campaign, of one code of it, or one event) as their owner; with ``resubmit``
    their failed jobs run again. Fixing a job's error lifts its cluster's blacklist for the campaign once no
    other cause of it is open; fixing a blacklist fixes its causes (:mod:`cigri.events`)."""
    user = user or current_user()
    if event_id is not None:
        events = store.events(event_id=event_id, open_only=False)
        if not events:
            raise NotFound(f"no event {event_id}")
        if events[0].state != EventState.OPEN:
            raise CigriError(f"event {event_id} is already closed")
    elif campaign_id is not None:
        _owned(store, campaign_id, user)
        events = store.events(campaign_id=campaign_id, code=code)
    else:
        raise CigriError("say which events to fix: -c CAMPAIGN or an EVENT_ID")
    for event in events:
        if event.campaign_id is not None:
            _owned(store, event.campaign_id, user)
        elif event.code == EventCode.ADMIN_BLACKLIST:
            check_admin(store, user)
        elif user != "root":
            raise PermissionDenied(f"event {event.id} is a cluster event: it closes itself when the cluster answers")
    why = f"fixed{' and resubmitted' if resubmit else ''} by {user}"
    with store.transaction():
        closed = event_rules.close(store, events, clock.now(), why)
        jobs = [e.job_id for e in closed if e.job_id is not None]
        stages = [(e.campaign_id, e.cluster, e.code.value) for e in closed if e.code.value.endswith("LOGUE_ERROR")]
        for event in closed:  # a campaign its failure rate paused runs again once that event is fixed
            if event.code in PAUSING and store.campaign(event.campaign_id).state == CampaignState.PAUSED:
                store.set_campaign_state(event.campaign_id, CampaignState.IN_TREATMENT)
        resubmitted = 0
        if resubmit:
            failed = [j for j in jobs if store.job(j).state == JobState.EVENT]
            store.requeue(failed, count_resubmit=False)
            resubmitted = len(failed)
            for cid, cluster, stage_code in stages:
                stage = "prologue" if stage_code.startswith("PROLOGUE") else "epilogue"
                failed_remote = store.campaign_clusters(cid)[cluster][f"{stage}_remote"] or "none"
                # a new attempt needs a key of its own, or the RM would hand back the failed run
                retry = f"{RETRY}0:{stage_remote(failed_remote)[0]}"
                store.set_stage(cid, cluster, stage, "todo" if stage == "prologue" else "due", retry)
        else:
            for cid, cluster, stage_code in stages:
                if stage_code.startswith("PROLOGUE"):
                    store.set_stage(cid, cluster, "prologue", "done")  # the user accepts it: jobs may run
    return FixResult(len(closed), resubmitted)


def rm_details(store: Store, job_id: int, clock: Clock, *, user: str | None = None) -> dict:
    """What the resource manager running a job says of it, read now from its cluster (CiGri's gridstat -C):
    the adapter's :meth:`~cigri.adapters.ResourceManager.details`. Only the campaign's owner (or root)."""
    job = store.job(job_id)
    check_owner(store.campaign(job.campaign_id), user or current_user())
    if not job.cluster or not job.remote_id:
        raise CigriError(f"job {job_id} has not been sent to a cluster yet: no resource manager knows it")
    if not store.has_cluster(job.cluster):
        raise NotFound(f"cluster {job.cluster}, where job {job_id} ran, is no longer in the state")
    adapter = adapter_for(store.cluster(job.cluster), AdapterContext(store.directory, clock))
    try:
        return adapter.details(job.remote_id)
    finally:
        adapter.close()


def state_owner(store: Store) -> str:
    """The user who owns the state file."""
    uid = store.path.stat().st_uid if store.path.exists() else os.geteuid()  # an in-memory state is this user's
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def check_admin(store: Store, user: str) -> None:
    """The admin of a state is root or the user owning its file (a user's own SQLite file: that user)."""
    owner = state_owner(store)
    if user != "root" and user != owner:
        if owner == "root":
            raise PermissionDenied("only root (the state file's owner) administers clusters")
        raise PermissionDenied(f"only root or {owner} (the state file's owner) administer clusters")


def blacklist_cluster(store: Store, cluster: str, reason: str, clock: Clock, *, user: str | None = None) -> int:
    """The admin keeps every campaign off ``cluster`` (its running jobs end there); the event's id."""
    user = user or current_user()
    check_admin(store, user)
    store.cluster(cluster)
    if (event := store.blacklist(None, cluster)) is not None:
        raise CigriError(f"cluster {cluster} is already blacklisted (event {event.id})")
    with store.transaction():
        return store.open_event(
            EventClass.CLUSTER,
            EventCode.ADMIN_BLACKLIST,
            f"blacklisted by {user}" + (f": {reason}" if reason else ""),
            clock.now(),
            cluster=cluster,
        )


def unblacklist_cluster(store: Store, cluster: str, clock: Clock, *, user: str | None = None) -> int:
    """Lift the admin's blacklist of ``cluster``; the event's id."""
    user = user or current_user()
    check_admin(store, user)
    event = store.blacklist(None, cluster)
    if event is None:
        store.cluster(cluster)
        raise CigriError(f"cluster {cluster} is not blacklisted")
    with store.transaction():
        store.close_events([event.id], clock.now(), f"lifted by {user}")
    return event.id


def mark_job_event(store: Store, job_id: int, reason: str, clock: Clock, *, user: str | None = None) -> int:
    """The admin opens a manual event on a job that terminated (CiGri's ``--mark-job-event``: its result is
    bad); the job waits on it as a failed one does, and its campaign, if over, is in treatment again, its
    epilogues to run anew. Fixing the event with a resubmit (gridevents -f -r) runs the job again."""
    user = user or current_user()
    check_admin(store, user)
    job = store.job(job_id)
    campaign = store.campaign(job.campaign_id)
    if job.state == JobState.EVENT:
        raise CigriError(f"job {job_id} already waits on an open event: see gridevents -c {campaign.id}")
    if job.state != JobState.TERMINATED:
        raise CigriError(f"job {job_id} is {job.state.value}: only a terminated job is marked")
    if campaign.state == CampaignState.CANCELLED:
        raise CigriError(f"campaign {campaign.id} is cancelled: its jobs run no more")
    with store.transaction():
        store.set_job_state([job_id], JobState.EVENT, only_from=[JobState.TERMINATED])
        event = store.open_event(
            EventClass.JOB,
            EventCode.MANUAL,
            f"marked by {user}" + (f": {reason}" if reason else ""),
            clock.now(),
            cluster=job.cluster,
            campaign_id=campaign.id,
            job_id=job_id,
        )
        if campaign.state == CampaignState.TERMINATED:
            _reopen(store, campaign.id)
    return event


def _reopen(store: Store, campaign_id: int) -> None:
    """A terminated campaign in treatment again (new jobs, a job marked bad): each cluster's epilogue runs
    anew once the campaign's jobs are over there, as a new attempt (the RM may still hold the last one's
    batch, which its key would find)."""
    store.set_campaign_state(campaign_id, CampaignState.IN_TREATMENT)
    for cluster, info in store.campaign_clusters(campaign_id).items():
        if not info["settings"].get("epilogue"):
            continue
        previous = info["epilogue_remote"]
        if previous and not previous.startswith(RETRY):
            previous = f"{RETRY}0:{stage_remote(previous)[0]}"
        store.set_stage(campaign_id, cluster, "epilogue", "todo", previous)


def blocked_reason(store: Store, campaign: Campaign) -> str | None:
    """Why a campaign that is not over cannot progress without the user (or a cluster's return), or None."""
    if campaign.state == CampaignState.PAUSED:
        return "paused"
    if campaign.state != CampaignState.IN_TREATMENT:
        return None
    counts = store.counts(campaign.id)
    if any(counts[s] for s in (JobState.LAUNCHING, JobState.SUBMITTED, JobState.RUNNING)):
        return None
    clusters = store.campaign_clusters(campaign.id, settings=False)
    if campaign.type == CampaignType.TEST and all(info["launched"] for info in clusters.values()):
        return None  # its test is over: the next pass ends it
    closed = _closed_clusters(store, campaign, clusters)
    if counts[JobState.TO_LAUNCH] and len(closed) < len(clusters):
        return None
    # a test that could not start on a cluster ends there: that event does not wait for the user
    events = [e for e in store.events(campaign_id=campaign.id) if e.code != EventCode.TEST_NOT_STARTED]
    if events:
        return f"{len(events)} open event(s): see gridevents -c {campaign.id}"
    if counts[JobState.TO_LAUNCH]:
        return "no usable cluster: " + ", ".join(f"{name} {why}" for name, why in sorted(closed.items()))
    return None


def _closed_clusters(store: Store, campaign: Campaign, clusters: dict[str, dict]) -> dict[str, str]:
    """The campaign's clusters where it cannot send a job now, with why."""
    blocked = store.blocked_clusters(campaign.id)
    closed = {}
    for name, info in clusters.items():
        if name in blocked and store.blacklist(None, name) is not None:
            closed[name] = "blacklisted by the admin"
        elif name in blocked:
            closed[name] = "has an open event of the campaign"
        elif store.open_cluster_event(name) is not None:
            closed[name] = "unreachable"
        elif campaign.type == CampaignType.TEST and info["launched"]:
            closed[name] = "tested"
    return closed
