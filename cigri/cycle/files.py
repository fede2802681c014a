"""Nikita's file chores, each pass: gather the declared outputs of terminated jobs, and delete from the clusters'
caches the input copies no remaining job uses (what :mod:`cigri.staging` staged). A cluster that fails either is
closed for the pass with an event; the others go on."""

from __future__ import annotations

import os
from pathlib import Path

from .. import macros, staging
from ..adapters.files import can_move_files, sha256_of
from ..errors import AdapterError, JdlError
from ..jdl import expand_files, split_params, under
from ..model import EventClass, EventCode
from .context import Context
from .health import cluster_failed, cluster_usable

log = staging.log


def clean(ctx: Context) -> None:
    """Delete from each usable cluster up to :data:`~cigri.staging.DELETE_BATCH` copies that no remaining job uses."""
    for cluster in ctx.store.clusters_with_unneeded():
        if not ctx.store.has_cluster(cluster) or not cluster_usable(ctx, cluster):
            continue
        rows = ctx.store.unneeded_files(cluster, staging.DELETE_BATCH)
        try:
            staging.delete_copies(ctx, cluster, rows)
        except AdapterError as exc:
            cluster_failed(ctx, cluster, exc)
            continue
        log.info("staging: %d copies no job needs deleted from %s", len(rows), cluster)


def gather(ctx: Context) -> None:
    """Copy the declared outputs of terminated jobs back to their campaign's output_destination."""
    if not ctx.store.has_outputs_due():
        return
    done: list[int] = []
    for job_id, campaign_id, cluster, name, params in ctx.store.outputs_due(staging.GATHER_BATCH):
        record = ctx.store.campaign(campaign_id).jdl
        if not ctx.store.has_cluster(cluster) or not cluster_usable(ctx, cluster):
            continue
        adapter = ctx.adapter(cluster)
        if not can_move_files(adapter):
            continue
        directory = macros.with_campaign(ctx.settings(campaign_id)[cluster]["exec_directory"], campaign_id)
        destination = Path(record["output_destination"])
        try:
            problems = _gather_job(adapter, directory, destination, record["output_file"], params, name)
        except AdapterError as exc:
            cluster_failed(ctx, cluster, exc)
            continue
        with ctx.store.transaction():
            for problem in problems:
                ctx.store.open_event(
                    EventClass.JOB,
                    EventCode.OUTPUT_ERROR,
                    problem,
                    ctx.clock.now(),
                    campaign_id=campaign_id,
                    job_id=job_id,
                )
            ctx.store.outputs_gathered([job_id])
        done.append(job_id)
        ctx.report.add("gathered", 1)
    if done:
        log.info("staging: outputs of %d jobs gathered", len(done))


def _gather_job(adapter, directory: str, destination: Path, templates, params: str, name: str) -> list[str]:
    """Copy one job's outputs into its folder of ``destination``; the problems found (a missing file, a damaged
    copy, a name or file that would lead out of ``destination``: a job recorded before names were checked)."""
    where = f"output_file (job {name})"
    folder = under(str(destination), name)
    if folder is None:
        return [f"outputs of job {name!r}: its folder would be outside output_destination {destination}"]
    try:
        keys = expand_files(tuple(templates), split_params(params, where), where)
    except JdlError as exc:
        return [str(exc)]
    problems = []
    for key in keys:
        inside = under(folder, key)
        if inside is None:
            problems.append(f"output {key} of job {name!r}: outside output_destination {destination}")
            continue
        target = Path(inside)
        checksum = adapter.get_file(adapter.job_path(directory, key), target)
        if checksum is None:
            problems.append(f"output {key} of job {name}: not found in its exec_directory")
            continue
        try:
            if checksum != sha256_of(target):
                os.remove(target)
                problems.append(f"output {key} of job {name}: damaged in transfer (checksums differ)")
        except OSError as exc:
            problems.append(f"output {key} of job {name}: cannot check {target}: {exc.strerror}")
    return problems
