"""Input files and outputs of campaigns (issue 13, after BOINC's locality scheduling).

- At submission (:func:`register`), each job's ``input_files`` templates are expanded over its param words;
  every file named is read under the campaign's ``data_source`` (size, sha256): a missing one refuses the
  campaign, nothing written.
- Before the runner submits a batch (:func:`stage_batch`), every file its jobs use that the cluster's cache
  does not hold is checked against its submission checksum here, copied through the cluster's adapter into
  ``<cache_dir>/<state instance>/<campaign id>/<key>`` (:func:`state_cache`: states sharing a cache_dir keep
  apart), and its checksum computed on the cluster must match. Jobs find the folder
  in ``CIGRI_INPUT_DIR``. With a ``cache_quota``, the batch's first jobs whose files fit go, once the least
  recently used copies no job queued or running there uses are deleted as needed; the others go back to the
  bag for this pass (a job is never sent with part of its files).
- Each pass (:func:`cigri.cycle.files.clean`) deletes from the clusters the copies that no remaining job of
  their campaign uses (BOINC's deletion hints), in batches (:data:`DELETE_BATCH`).
- After a job terminates (:func:`cigri.cycle.files.gather`), its ``output_file`` files are copied from its
  exec_directory on its cluster to ``<output_destination>/<job name>/``, checksum compared; a missing or
  damaged one is an OUTPUT_ERROR event of the job (:data:`GATHER_BATCH` jobs a pass).

A cluster that fails a transfer (or whose copy arrives damaged) is that cluster's trouble: it is closed for the
pass with an event, the batch goes back to the bag, the other clusters go on. An input file changed or gone
since submission is the campaign's: it is paused with an INPUT_CHANGED event (fixing it resumes it).
Not built: data sources other than a local folder, one copy shared by campaigns using the same bytes (a file
is its campaign's), outputs through anything but the cluster's own transport.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from .adapters.files import sha256_of
from .errors import AdapterError, JdlError, SubmitError
from .jdl import expand_files, jobs_of, split_params
from .model import DataFile, JobSpec
from .store import Store

log = logging.getLogger("cigri.staging")

DELETE_BATCH = 500  # copies deleted from one cluster per pass, at most
GATHER_BATCH = 200  # jobs whose outputs are gathered per pass, at most


def register(store: Store, campaign_id: int, data_source: Path, templates: tuple[str, ...], after: int = 0) -> int:
    """Record the input files of the campaign's jobs above id ``after`` (in the caller's transaction); how many
    distinct files. Raises JdlError naming the first job whose file is not under ``data_source``."""
    uses: list[tuple[int, str]] = []
    first_user: dict[str, str] = {}
    for job in store.jobs(campaign_id):
        if job.id <= after:
            continue
        where = f"input_files (job {job.name})"
        for key in expand_files(templates, split_params(job.params, where), where):
            uses.append((job.id, key))
            first_user.setdefault(key, job.name)
    known = store.campaign_files(campaign_id)
    files = describe(data_source, [key for key in first_user if key not in known], first_user)
    store.add_files(campaign_id, files, uses)
    return len(first_user)


def check_inputs(jdl) -> tuple[int, int]:
    """For ``gridsub --dry-run``: every job's input files exist under data_source (nothing hashed); how many
    distinct files, and their bytes. Raises JdlError as :func:`register`."""
    sizes: dict[str, int] = {}
    for name, line in jobs_of(jdl):
        where = f"input_files (job {name})"
        for key in expand_files(jdl.input_files, split_params(line, where), where):
            if key not in sizes:
                path = jdl.data_source / key
                if not path.is_file():
                    raise JdlError("input_files", f"{key} (job {name}): no such file in data_source {jdl.data_source}")
                sizes[key] = path.stat().st_size
    return len(sizes), sum(sizes.values())


def describe(data_source: Path, keys: list[str], users: dict[str, str] | None = None) -> list[DataFile]:
    """Each file's size and sha256, read under ``data_source``."""
    out = []
    for key in keys:
        path = data_source / key
        if not path.is_file():
            job = f" (job {users[key]})" if users and key in users else ""
            raise JdlError("input_files", f"{key}{job}: no such file in data_source {data_source}")
        try:
            out.append(DataFile(key, path.stat().st_size, sha256_of(path)))
        except OSError as exc:
            raise JdlError("input_files", f"{key}: cannot read {path}: {exc.strerror}") from exc
    return out


def data_source(campaign) -> Path | None:
    """The campaign's local data_source (None for the simulator's campaigns, whose files are made up)."""
    folder = campaign.jdl.get("data_source")
    return Path(folder) if folder else None


def state_cache(ctx, cluster: str) -> str:
    """This state's folder in the cluster's cache. Two states of one login number their campaigns alike and may
    share a cache_dir: each keeps its copies under its own instance (the state's random id, also in its batch
    keys), so that one's clean-up never deletes what the other's jobs read."""
    return f"{ctx.adapter(cluster).cache_dir().rstrip('/')}/{ctx.store.instance}"


def input_dir(ctx, cluster: str, campaign_id: int) -> str:
    """The campaign's folder of copies on the cluster (its jobs' ``CIGRI_INPUT_DIR``)."""
    return f"{state_cache(ctx, cluster)}/{campaign_id}"


class InputChanged(Exception):
    """A file of the campaign's data_source is no longer what was read at submission (or is gone)."""


class QuotaFull(Exception):
    """Not even the batch's first job's files fit in the cluster's cache quota, after evictions."""


def stage_batch(
    ctx, cluster: str, campaign_id: int, job_ids: list[int], data_source: Path | None
) -> tuple[dict[int, list[str]], list[int]]:
    """Put in the cluster's cache every file the batch's jobs use: (each staged job's file keys, the jobs left
    out because the cluster's cache quota cannot take their files too; in job order, so the first ones go).
    Each file is checked against its submission checksum before it is sent (``data_source`` None: the
    simulator's, which copies nothing). Raises AdapterError (the cluster failed: the caller closes it),
    :class:`QuotaFull` or :class:`InputChanged`."""
    store: Store = ctx.store
    per_job = store.job_files(job_ids)
    needed = {f.key: f for files in per_job.values() for f in files}
    if not needed:
        return {}, []
    adapter = ctx.adapter(cluster)
    ids = store.file_ids(campaign_id, needed)
    held = store.cache_state(cluster, list(ids.values()))
    kept, left = _fitting(ctx, cluster, job_ids, per_job, ids, held)
    needed = {f.key: f for job_id in kept for f in per_job.get(job_id, ())}
    missing = [key for key in sorted(needed) if held.get(ids[key]) not in ("held", "unneeded")]
    folder = input_dir(ctx, cluster, campaign_id)
    for key in missing:
        file = needed[key]
        if data_source is not None:
            _check_source(data_source / key, file)
        with store.transaction():  # recorded first: a pass killed mid-copy leaves a row to redo
            store.note_staging(cluster, ids[key], file.size, ctx.clock.now())
        checksum = adapter.put_file((data_source or Path(".")) / key, f"{folder}/{key}", file)
        if checksum != file.sha256:  # damaged on the way: no job may read it
            delete_copies(ctx, cluster, [(ids[key], campaign_id, key)])
            raise AdapterError(f"{cluster}: {key} arrived damaged (sha256 {checksum or 'none'}, not {file.sha256})")
        with store.transaction():
            store.set_held(cluster, ids[key], ctx.clock.now())
        ctx.report.add("staged", 1)
        log.info("staging: %s (%d bytes) of campaign %d on %s", key, file.size, campaign_id, cluster)
    with store.transaction():
        store.touch_files(cluster, [ids[key] for key in needed], ctx.clock.now())
    return {job_id: [f.key for f in per_job[job_id]] for job_id in kept if job_id in per_job}, left


def _check_source(path: Path, file: DataFile) -> None:
    try:
        if sha256_of(path) == file.sha256:
            return
        problem = "changed since the campaign was submitted"
    except OSError as exc:
        problem = f"unreadable since the campaign was submitted ({exc.strerror})"
    raise InputChanged(f"input file {file.key} is {problem}: restore it, then fix this event (gridevents -f)")


def staged_spec(ctx, cluster: str, campaign, spec: JobSpec) -> JobSpec:
    """One job's description with its input files staged on ``cluster`` (a finalize replica's): unchanged for a
    campaign without files. Raises as :func:`stage_batch`."""
    if not ctx.store.has_files(campaign.id):
        return spec
    inputs, left = stage_batch(ctx, cluster, campaign.id, [spec.job_id], data_source(campaign))
    if left:
        raise QuotaFull(f"{cluster}: its cache quota cannot take the files of job {spec.job_id}")
    folder = input_dir(ctx, cluster, campaign.id)
    return replace(spec, env={**spec.env, "CIGRI_INPUT_DIR": folder}, inputs=tuple(inputs.get(spec.job_id, ())))


def _fitting(ctx, cluster: str, job_ids: list[int], per_job, ids, held) -> tuple[list[int], list[int]]:
    """The batch's jobs whose files fit in the cluster's cache_quota (the first ones, in order), once the least
    recently used copies no job queued or running there uses are evicted as needed (done here), sparing the
    copies the kept jobs use; and the others. SubmitError: the first job needs more than the whole quota, so
    that it can never run there (the runner opens an event keeping its campaign off the cluster)."""
    quota = ctx.store.cluster(cluster).config.get("cache_quota")
    if not quota:
        return list(job_ids), []
    used = ctx.store.cache_used(cluster)
    evictable = ctx.store.evictable(cluster)
    protected: set[int] = set()
    adding, kept = 0, []
    for job_id in job_ids:
        files = per_job.get(job_id, ())
        if not kept and (need := sum(f.size for f in files)) > quota:  # not even in an empty cache: never
            raise SubmitError(
                f"{cluster}: its cache quota ({quota} bytes) is smaller than the {need} bytes job {job_id} needs"
            )
        new = {ids[f.key]: f.size for f in files if ids[f.key] not in held and ids[f.key] not in protected}
        spared = protected | {ids[f.key] for f in files}
        freeable = sum(row[3] for row in evictable if row[0] not in spared)
        if used - freeable + adding + sum(new.values()) > quota:
            break
        adding += sum(new.values())
        protected = spared
        kept.append(job_id)
    if not kept:
        raise QuotaFull(f"{cluster}: its cache quota ({quota} bytes) cannot take the files of the next job")
    victims, freed = [], 0
    for file_id, campaign_id, key, size in evictable:
        if used - freed + adding <= quota:
            break
        if file_id not in protected:
            victims.append((file_id, campaign_id, key))
            freed += size
    if victims:
        delete_copies(ctx, cluster, victims)
        log.info("staging: %d copies evicted from %s (%d bytes) to make room", len(victims), cluster, freed)
    return kept, job_ids[len(kept) :]


def delete_copies(ctx, cluster: str, rows: list[tuple[int, int, str]]) -> None:
    """Delete these copies (file, campaign, key) from the cluster's cache, and forget them."""
    folder = state_cache(ctx, cluster)
    ctx.adapter(cluster).remove_paths([f"{folder}/{campaign_id}/{key}" for _, campaign_id, key in rows])
    with ctx.store.transaction():
        ctx.store.forget_cluster_files(cluster, [file_id for file_id, _, _ in rows])
    ctx.report.add("deleted", len(rows))
