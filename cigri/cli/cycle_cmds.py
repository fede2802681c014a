"""almighty and the cycle's stages, each runnable on its own."""

from __future__ import annotations

import contextlib
import sys

import click

from .. import cycle as cycle_mod
from .. import notify
from ..errors import Blocked
from ..loop import run_passes
from ..model import CampaignState, JobState
from .app import GridCommand, app, common, policy_option


def _cycle(policy: str | None = None) -> cycle_mod.Cycle:
    """The cycle on this state: ``policy`` decides for every cluster, else the configured strategies with
    their configured options."""
    from .. import config

    a = app()
    settings = a.store.settings()
    scheduler = config.build(settings, policy) if policy else None
    return cycle_mod.Cycle(a.store, a.clock, scheduler=scheduler, forecaster=config.forecaster(settings))


@click.command("almighty", cls=GridCommand)
@click.option("--loop", is_flag=True, help="Repeat passes until interrupted.")
@click.option(
    "--until-done",
    is_flag=True,
    help="Repeat passes until every campaign is over (its outputs gathered) or blocked (then exit 13).",
)
@click.option(
    "--period",
    type=click.FloatRange(min=0.05),
    default=10.0,
    show_default=True,
    help="Seconds between passes when looping; a pass comes sooner when a local job ends.",
)
@click.option(
    "--timeout", type=click.FloatRange(min=0), help="With --until-done: give up (exit 12) after this many seconds."
)
@policy_option
@common
def almighty(loop, until_done, period, timeout, policy):
    """Run the cycle: updator, spritz, metasched, runner, nikita; then send
    gridnotify's notifications.

    One pass and exit (for cron), or --loop, or --until-done. Two passes on the
    same state never overlap. Logs go to stderr (-v for more) and to
    almighty.log beside the state file.

    \b
    Example (crontab, a pass every minute):
        * * * * *  $HOME/.venv/bin/grid almighty
    Example:
        grid almighty --until-done
    """
    a = app()
    a.setup_logging(to_file=True)
    cycle = _cycle(policy)
    progress = _Progress() if (loop or until_done) and sys.stderr.isatty() else None

    def after_pass(done: cycle_mod.Cycle) -> None:
        notify.run(done.store, done.clock)  # gridnotify's mails and webhooks: what this pass did
        if progress:
            progress.update(done)

    try:
        with cycle_mod.exclusive(a.store), progress or contextlib.nullcontext():
            blocked = run_passes(
                cycle,
                a.clock,
                loop=loop,
                until_done=until_done,
                period=period,
                timeout=timeout,
                on_pass=after_pass,
            )
    finally:
        cycle.close()
    for campaign_id, reason in blocked:
        click.echo(f"campaign {campaign_id} is blocked: {reason}", err=True)
    if blocked:  # not done: `gridsub ... && grid almighty --until-done && next` must not carry on
        raise Blocked(
            f"{len(blocked)} campaign{'s' if len(blocked) > 1 else ''} blocked: fix or resubmit their events "
            "(gridevents -c ID -f [-r]), then run again"
        )


class _Progress:
    """A live bar per running campaign, on a terminal, while almighty loops."""

    def __init__(self):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        self.tasks: dict[int, int] = {}

    def __enter__(self):
        self.bars.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bars.__exit__(*exc)

    def update(self, cycle: cycle_mod.Cycle) -> None:
        store = cycle.store
        for campaign in store.campaigns(states=[CampaignState.IN_TREATMENT, CampaignState.PAUSED]):
            if campaign.id not in self.tasks:
                self.tasks[campaign.id] = self.bars.add_task(f"campaign {campaign.id} {campaign.name}")
        for campaign_id, task in self.tasks.items():
            counts = store.counts(campaign_id)
            total = sum(counts.values()) - counts[JobState.SKIPPED]
            self.bars.update(task, completed=counts[JobState.TERMINATED], total=total)


def _stage_command(stage: str, doc: str):
    @click.command(
        stage,
        cls=GridCommand,
        help=doc
        + "\n\nRuns this stage of the almighty cycle once, under the almighty lock, and prints what it did."
        + f"\n\n\b\nExample:\n    grid {stage}\n    grid {stage} -v     # each action it takes",
    )
    @common
    def command():
        a = app()
        a.setup_logging(to_file=True)
        cycle = _cycle()
        try:
            with cycle_mod.exclusive(a.store):
                report = cycle.run([stage])
        finally:
            cycle.close()
        for key, n in sorted(report.counts.items()):
            click.echo(f"{key}: {n}")

    return command


STAGE_COMMANDS = [
    _stage_command("updator", "Collect job states, exit codes and cluster usage; settle finished campaigns."),
    _stage_command("spritz", "Update each campaign's throughput and estimated end."),
    _stage_command(
        "metasched", "Choose which jobs go to which cluster (test campaigns first, then the configured strategy)."
    ),
    _stage_command("runner", "Stop the jobs the metascheduler took back, submit those it chose, and due stages."),
    _stage_command("nikita", "Kill the jobs users cancelled."),
]

assert {c.name for c in STAGE_COMMANDS} == set(cycle_mod.STAGES)
