"""The runner: stop the jobs the metascheduler took back, submit the batches it recorded and the replicas,
then due prologues and epilogues."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from .. import macros, staging
from ..adapters import job_id_variable, packing
from ..errors import AdapterError, SubmitError
from ..jdl import split_params
from ..model import Campaign, CampaignState, EventClass, EventCode, JobSpec, JobState
from ..secrets import masked_errors, secret_values
from ..stages import stage_retry
from . import replicas
from .context import Context, job_slots, log
from .health import cancel_each, cluster_failed, cluster_usable


def run(ctx: Context) -> None:
    """Stop the jobs to stop (their slots go to the batches), submit recorded batches, then due prologues
    and epilogues."""
    _preempt(ctx)
    campaigns: dict[int, Campaign] = {}
    for batch_id, cluster, campaign_id in ctx.store.unfinished_batches():
        if campaign_id not in campaigns:
            campaigns[campaign_id] = ctx.store.campaign(campaign_id)
        _submit_batch(ctx, batch_id, cluster, campaigns[campaign_id])
    replicas.submit(ctx, _spec)
    for campaign_id, cluster, stage, state, previous in ctx.store.stages_in(("todo", "due")):
        if (stage, state) == ("prologue", "todo") or (stage, state) == ("epilogue", "due"):
            _submit_stage(ctx, ctx.store.campaign(campaign_id), cluster, stage, previous)


def _preempt(ctx: Context) -> None:
    """Cancel the jobs a strategy stopped, queued or running, and return them to their bags: a preemption
    (counted on the job), neither a failure nor a resubmission. A running job's slot-seconds go to its user's
    usage. A job no longer on its cluster is left alone; one whose cluster fails the cancel stays there,
    to be stopped in a later pass."""
    per_cluster: dict[str, list[tuple[int, str]]] = defaultdict(list)
    started: dict[int, tuple[int, float | None]] = {}
    gone = []
    for job_id, campaign_id, cluster, state, remote, started_at in ctx.store.jobs_to_stop():
        if state in (JobState.SUBMITTED.value, JobState.RUNNING.value) and remote is not None:
            per_cluster[cluster].append((job_id, remote))
            started[job_id] = (campaign_id, started_at)
        else:
            gone.append(job_id)
    if gone:
        with ctx.store.transaction():
            ctx.store.clear_stop(gone)
    now = ctx.clock.now()

    def preempted(cluster: str, ids: list[int]) -> None:
        held = [(started[i][0], max(0.0, now - started[i][1])) for i in ids if started[i][1] is not None]
        ctx.charge(cluster, held)
        ctx.store.requeue(ids, count_resubmit=False, preempted=True)
        ctx.report.add("preempted", len(ids))
        log.info("runner: %d jobs preempted on %s", len(ids), cluster)

    cancel_each(ctx, per_cluster, preempted)


def _spec(
    campaign: Campaign,
    settings: dict,
    job_id: int,
    name: str,
    argv: list[str],
    walltime: int | None = None,
    resume: bool = False,
) -> JobSpec:
    """A job's description for its RM, from its campaign's settings on the cluster (with its checkpoint
    signal when the campaign checkpoints by signal there). Its command and directory keep the home's macros,
    which the adapter expands with the cluster's home (:func:`cigri.macros.expand_home`)."""
    slots = settings.get("_slots") or job_slots(settings["resources"])
    return JobSpec(
        job_id=job_id,
        campaign_id=campaign.id,
        name=name,
        argv=tuple(macros.with_campaign(a, campaign.id) for a in argv[:1]) + tuple(argv[1:]),
        directory=macros.with_campaign(settings["exec_directory"], campaign.id),
        walltime=walltime or settings["walltime"],
        slots=slots,
        resources=settings["resources"],
        properties=settings.get("properties") or "",
        project=settings.get("project") or "",
        best_effort=settings.get("type") == "best-effort",
        user=campaign.user,
        env=settings.get("environment") or {},
        resume=resume,
        checkpoint_signal=settings.get("checkpointing_signal") or "",
        checkpoint_grace=settings.get("checkpointing_grace") or 0,
        job_types=tuple(filter(None, (settings.get("cluster_job_type") or "").split(","))),
    )


def scaled_walltime(settings: dict, scale: float | None) -> int:
    """The walltime of a job whose walltime kills raised it ``scale`` times (retry_resources), up to the cap
    of the cluster's retry_resources (its plain walltime on a cluster without them)."""
    retry = settings.get("retry_resources")
    if not scale or not retry:
        return settings["walltime"]
    return min(int(settings["walltime"] * scale), retry["max_walltime"])


def _submit_batch(ctx: Context, batch_id: int, cluster: str, campaign: Campaign) -> None:
    jobs = ctx.store.batch_jobs(batch_id)
    if not jobs:
        with ctx.store.transaction():
            ctx.store.finish_batch(batch_id, {}, ctx.clock.now())
        return
    settings = ctx.settings(campaign.id)[cluster]
    resume, scale = ctx.store.batch_kind(batch_id)
    adapter = ctx.adapter(cluster)
    key = ctx.batch_key(campaign.id, "b", batch_id)
    try:
        with hidden_environment(settings):
            ctx.watch(cluster)
            inputs = _stage(ctx, batch_id, cluster, campaign, [job_id for job_id, _, _ in jobs])
            if inputs is None:
                return
            # what the batch's jobs share
            base = _spec(campaign, settings, 0, "", [settings["exec_file"]], scaled_walltime(settings, scale), resume)
            if ctx.store.has_files(campaign.id):
                jobs = ctx.store.batch_jobs(batch_id)  # without those the cache quota left out
                base = replace(base, env={**base.env, "CIGRI_INPUT_DIR": staging.input_dir(ctx, cluster, campaign.id)})
            specs = [
                base.for_job(
                    job_id, name, (*base.argv, *split_params(params, f"job {job_id}")), tuple(inputs.get(job_id, ()))
                )
                for job_id, name, params in jobs
            ]
            layout = _pack_layout(ctx, batch_id, cluster, campaign.id, settings)
            if layout is not None and layout["size"] > 1:
                packs = [specs[i : i + layout["size"]] for i in range(0, len(specs), layout["size"])]
                remote = adapter.submit_packs(key, packs, layout["lanes"], layout["cores"], batch_id not in ctx.fresh)
            else:
                # only a batch an earlier (killed) pass recorded may already be on the cluster
                remote = None if batch_id in ctx.fresh else adapter.find_batch(key)
                if remote is None:
                    remote = adapter.submit(key, specs)
    except SubmitError as exc:
        with ctx.store.transaction():
            ctx.store.abandon_batch(batch_id)
            ctx.store.open_event(
                EventClass.CAMPAIGN,
                EventCode.SUBMIT_ERROR,
                str(exc),
                ctx.clock.now(),
                cluster=cluster,
                campaign_id=campaign.id,
            )
        log.warning("runner: %s refused campaign %d: %s", cluster, campaign.id, exc)
        return
    except AdapterError as exc:
        cluster_failed(ctx, cluster, exc)  # the batch stays recorded and is retried when the cluster answers
        return
    with ctx.store.transaction():
        ctx.store.finish_batch(
            batch_id, {job_id: rid for (job_id, _, _), rid in zip(jobs, remote, strict=False)}, ctx.clock.now()
        )
    ctx.report.add("submitted", len(jobs))
    log.info("runner: %d jobs of campaign %d submitted to %s", len(jobs), campaign.id, cluster)


def hidden_environment(settings: dict):
    """Around a campaign's calls to a cluster's adapter: what they raise has the values of the campaign's JDL
    environment masked (:mod:`cigri.secrets`), whatever the adapter quoted (a command, the RM's answer). The
    error becomes the campaign's event, the cluster's event others see, a log line."""
    return masked_errors(secret_values(settings.get("environment") or {}))


def _stage(ctx: Context, batch_id: int, cluster: str, campaign: Campaign, job_ids: list[int]):
    """Stage the batch's input files on the cluster (:mod:`cigri.staging`): each job's file keys, or None when
    the cluster's cache quota cannot take the first job's (the batch goes back to the bag for this pass); the
    jobs whose files do not fit beside the first ones leave the batch the same way. AdapterError: the cluster
    failed to stage (the batch goes back to the bag: other clusters may take its jobs)."""
    if not ctx.store.has_files(campaign.id):
        return {}
    try:
        inputs, left = staging.stage_batch(ctx, cluster, campaign.id, job_ids, staging.data_source(campaign))
    except AdapterError:  # the cluster's trouble: its jobs may go elsewhere meanwhile
        with ctx.store.transaction():
            ctx.store.abandon_batch(batch_id)
        raise
    except staging.InputChanged as exc:
        with ctx.store.transaction():
            ctx.store.abandon_batch(batch_id)
            _pause(ctx, campaign, EventCode.INPUT_CHANGED, str(exc))
        return None
    except staging.QuotaFull as exc:
        with ctx.store.transaction():
            ctx.store.abandon_batch(batch_id)
        ctx.report.add("quota-full", len(job_ids))
        log.warning("runner: %d jobs of campaign %d kept off %s this pass: %s", len(job_ids), campaign.id, cluster, exc)
        return None
    if left:
        with ctx.store.transaction():
            ctx.store.leave_batch(batch_id, left)
        ctx.report.add("quota-full", len(left))
        log.warning(
            "runner: %d jobs of campaign %d kept off %s this pass: its cache quota is full",
            len(left),
            campaign.id,
            cluster,
        )
    return inputs


def _pause(ctx: Context, campaign: Campaign, code: EventCode, message: str) -> None:
    """Pause a running campaign with an event saying why (fixing it resumes the campaign)."""
    if ctx.store.campaign(campaign.id).state != CampaignState.IN_TREATMENT:
        return
    ctx.store.set_campaign_state(campaign.id, CampaignState.PAUSED)
    ctx.store.open_event(EventClass.CAMPAIGN, code, message, ctx.clock.now(), campaign_id=campaign.id)
    log.warning("runner: campaign %d paused: %s", campaign.id, message)


def _pack_layout(ctx: Context, batch_id: int, cluster: str, campaign_id: int, settings: dict):
    """How a batch of a campaign packing its jobs there is cut into packs, fixed (and recorded) at its first
    submission: ``size`` jobs per pack (1: unpacked), run in ``lanes`` lanes on ``cores`` cores (dimensional
    packs take a node, their lanes are the jobs it holds at once). Jobs per lane come from the campaign's
    mean duration (:func:`~cigri.adapters.packing.pack_size`): 1 until one of its jobs has ended. None when
    the campaign does not pack there or the cluster cannot (the simulator's)."""
    temporal, dimensional = settings.get("temporal_grouping"), settings.get("dimensional_grouping")
    adapter = ctx.adapter(cluster)
    if not (temporal or dimensional) or not hasattr(adapter, "pack_dir"):
        return None
    layout = ctx.store.batch_pack(batch_id)
    if layout is None:
        cores = adapter.node_cores() if dimensional else None
        lanes = max(1, cores // settings["_slots"]) if cores else 1
        per_lane = 1
        if temporal:
            stats, counts = ctx.store.stats(campaign_id), ctx.store.counts(campaign_id)
            mean = stats["duration_sum"] / stats["duration_n"] if stats["duration_n"] else None
            per_lane = packing.pack_size(
                mean,
                settings["walltime"],
                jobs=counts[JobState.TO_LAUNCH] + counts[JobState.LAUNCHING],
                slots=ctx.slots.get(cluster) or adapter.capacity().total,
                target=None if temporal is True else temporal,
            )
        layout = {"size": per_lane * lanes, "lanes": lanes, "cores": cores}
        with ctx.store.transaction():
            ctx.store.set_batch_pack(batch_id, layout)
    return layout


def _submit_stage(ctx: Context, campaign: Campaign, cluster: str, stage: str, previous: str | None = None) -> None:
    if not cluster_usable(ctx, cluster):
        return
    settings = ctx.settings(campaign.id)[cluster]
    # shell lines run on the cluster: {HOME} is its $HOME there, {OAR_JOB_ID} its RM's variable
    variable = job_id_variable(ctx.store.cluster(cluster).adapter)
    script = macros.stage_script(settings[stage], campaign.id, variable)
    # in the home directory: a prologue typically creates the exec_directory
    spec = replace(
        _spec(campaign, settings, 0, stage, macros.stage_argv(script), settings[f"{stage}_walltime"]),
        directory="{HOME}",
        checkpoint_signal="",  # a stage is not checkpointed
    )
    try:
        ctx.watch(cluster)
        key = ctx.batch_key(campaign.id, cluster, stage)
        retry = stage_retry(previous)
        if retry:  # a new attempt: not the batch of the previous one
            key += f".retry-{retry[0]}-{retry[1]}"
        with hidden_environment(settings):
            remote = ctx.adapter(cluster).find_batch(key) or ctx.adapter(cluster).submit(key, [spec])
    except SubmitError as exc:
        with ctx.store.transaction():
            ctx.store.set_stage(campaign.id, cluster, stage, "failed")
            code = EventCode.PROLOGUE_ERROR if stage == "prologue" else EventCode.EPILOGUE_ERROR
            ctx.store.open_event(
                EventClass.CAMPAIGN, code, str(exc), ctx.clock.now(), cluster=cluster, campaign_id=campaign.id
            )
        return
    except AdapterError as exc:
        cluster_failed(ctx, cluster, exc)
        return
    with ctx.store.transaction():
        ctx.store.set_stage(campaign.id, cluster, stage, "submitted", f"{remote[0]}#{retry[0] if retry else 0}")
    log.info("runner: %s of campaign %d submitted to %s", stage, campaign.id, cluster)
