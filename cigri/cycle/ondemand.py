"""On-demand work (BOINC's locality scheduling, "need work for F"): a campaign whose JDL gives a
``work_generator`` command is asked for more jobs reading a file F when a cluster that holds F, and has free
slots this pass, has no waiting job of the campaign left for it.

The metascheduler stage calls :func:`generate` before it builds its snapshot, so that the new jobs are
placed in the same pass. The command runs on the cigri host (as the cycle's user), as ``COMMAND F`` with
``CIGRI_CAMPAIGN_ID`` in its environment, once per (campaign, file) and pass, and is waited for at most
``locality.generator_wait`` seconds (config; BOINC's bounded wait); the calls of a pass run side by side
(up to :data:`MAX_CALLS` at once). Every such file is asked for in the pass
it runs out of work: later in that pass nikita deletes copies no remaining job uses (BOINC's deletion hint),
and a file no cluster holds is not asked for again. Its answer:

- exit 0: each non-blank line of its output is a new job's param line (as in a ``param_file``: the first word
  is the job's name, unique in the campaign, and a file name: it names the job's folder of outputs, see
  :func:`cigri.jdl.check_job_name`); no line means no work for F now (F is asked for again once a cluster
  holds it without work again: the copies no job needs are deleted meanwhile);
- exit :data:`NO_MORE_WORK` (3): no more work for F, ever: F is marked and never asked for again;
- anything else (another exit status, no answer in time, a line that is not a valid param line, whose name is
  no file name or is already used): a WORK_GENERATOR event of the campaign naming F and the cause (the line
  as ``params[N]``, counted from 0 in the answer); nothing is added, and F is marked as for exit 3 (a broken
  generator is not run every pass).

New jobs join the campaign through the same path as ``gridsub -c`` (their input files read from the JDL's
template over their params), in one transaction: all of them or none. The marks are kept in the strategy
state ``locality.no_more_work`` ({campaign id: [file, ...]}), for the campaigns still running.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from .. import config
from ..adapters.transport import LocalRunner, Result
from ..campaigns import add_generated
from ..errors import CigriError, TransportError
from ..model import Campaign, EventClass, EventCode
from ..scheduling import ClusterView
from .context import Context, log

GENERATOR_KEY = "work_generator"  # the JDL key (campaign-wide)
NO_MORE_WORK = 3  # the generator's exit status meaning "no more work for this file"
MARKS = "locality.no_more_work"
MAX_CALLS = 8  # generator calls running at once


def generate(ctx: Context, campaigns: Sequence[Campaign], clusters: Sequence[ClusterView]) -> None:
    """Ask the generators of the campaigns that declare one for work on the files held, with nothing left to
    do, by clusters with free slots this pass; add what they answer. The calls run side by side (a pass
    waits ``generator_wait`` once, not once per file); their answers are added one after the other, in the
    order of the campaigns and of the files' names."""
    generating = [c for c in campaigns if c.jdl.get(GENERATOR_KEY)]
    kept = ctx.store.strategy_states().get(MARKS, {})
    marks = {key: files for key, files in kept.items() if int(key) in {c.id for c in campaigns}}
    roomy = [cluster.name for cluster in clusters if cluster.free > 0]
    asks: list[tuple[Campaign, str]] = []
    if generating and roomy:
        for campaign in generating:
            done = set(marks.get(str(campaign.id), []))
            idle = ctx.store.files_without_work(campaign.id, roomy).values()
            asks += [(campaign, file) for file in sorted(set().union(*idle) - done)]
    if asks:
        wait = config.generator_wait(ctx.store.settings())
        with ThreadPoolExecutor(max_workers=min(MAX_CALLS, len(asks))) as pool:
            answers = list(pool.map(lambda ask: _call(*ask, wait), asks))
        for (campaign, file), answer in zip(asks, answers, strict=True):
            if not _add(ctx, campaign, file, answer):
                marks[str(campaign.id)] = sorted({*marks.get(str(campaign.id), []), file})
    if marks != kept:
        with ctx.store.transaction():
            ctx.store.set_strategy_state(MARKS, marks)


def _call(campaign: Campaign, file: str, wait: float) -> Result | TransportError:
    """The campaign's generator run for ``file`` (no store here: this runs beside the other calls)."""
    argv = ["env", f"CIGRI_CAMPAIGN_ID={campaign.id}", *shlex.split(str(campaign.jdl[GENERATOR_KEY])), file]
    try:
        return LocalRunner().run(argv, timeout=wait)
    except TransportError as exc:
        return exc


def _add(ctx: Context, campaign: Campaign, file: str, result: Result | TransportError) -> bool:
    """Add the jobs a generator answered for ``file``; whether F may be asked again."""
    if isinstance(result, TransportError):
        return _failed(ctx, campaign, file, str(result))
    if result.returncode == NO_MORE_WORK:
        log.info("ondemand: campaign %d: no more work for %s", campaign.id, file)
        return False
    if not result.ok:
        return _failed(ctx, campaign, file, result.describe())
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if not lines:
        return True
    try:
        added = add_generated(ctx.store, campaign, lines)
    except CigriError as exc:
        return _failed(ctx, campaign, file, f"bad output: {exc}")
    ctx.report.add("generated", added)
    log.info("ondemand: campaign %d: %d jobs generated for %s", campaign.id, added, file)
    return True


def _failed(ctx: Context, campaign: Campaign, file: str, cause: str) -> bool:
    with ctx.store.transaction():
        ctx.store.open_event(
            EventClass.CAMPAIGN,
            EventCode.WORK_GENERATOR,
            f"work_generator for {file}: {cause}; nothing added, {file} gets no more generated work",
            ctx.clock.now(),
            campaign_id=campaign.id,
        )
    return False
