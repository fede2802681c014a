"""almighty and the cycle's stages, each runnable on its own."""

from __future__ import annotations

import contextlib
import sys

import click

from .. import cycle as cycle_mod
from .. import notify
from ..clock import Clock
from ..errors import Blocked, NotFound
from ..loop import run_passes
from ..model import CampaignState
from ..progress import Standing, standing
from ..store import Store
from . import output
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
@click.option(
    "--progress",
    "every",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Without a terminal (cron, pipes, CI logs): a progress line per campaign every SECONDS (after the pass "
    "that reaches them, and at the end). On a terminal, a live bar shows the same.",
)
@policy_option
@common
def almighty(loop, until_done, period, timeout, every, policy):
    """Run the cycle: updator, spritz, metasched, runner, nikita; then send
    gridnotify's notifications.

    One pass and exit (for cron), or --loop, or --until-done. Two passes on the
    same state never overlap. Logs go to stderr (-v for more) and to
    almighty.log beside the state file.

    While it loops on a terminal, a bar per campaign shows its jobs done out of
    all its jobs, its throughput and the time left to its estimated end (Spritz's:
    none while it is blocked). Without a terminal, --progress SECONDS prints the
    same as one line per campaign every SECONDS, on stderr:

    \b
        2026-05-04 10:00:00 campaign 3 sweep: 120/300 (40%), 720.0 jobs/h, ETA 00:15:00

    \b
    Example (crontab, a pass every minute):
        * * * * *  $HOME/.venv/bin/grid almighty
    Example:
        grid almighty --until-done
        grid almighty --until-done --progress 60 >> campaign.log 2>&1
    """
    a = app()
    a.setup_logging(to_file=True)
    cycle = _cycle(policy)
    if sys.stderr.isatty():
        progress = _Bars(a.store, a.clock) if loop or until_done else None
    else:
        progress = None if every is None else _Lines(a.store, a.clock, every)

    def after_pass(done: cycle_mod.Cycle) -> None:
        notify.run(done.store, done.clock)  # gridnotify's mails and webhooks: what this pass did
        if progress:
            progress.update()

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


def _rate(standing: Standing) -> str:
    return "- jobs/h" if standing.rate is None else f"{standing.rate * 3600:.1f} jobs/h"


def _left(standing: Standing, now: float) -> str:
    """The time left to the estimated end, or why there is none."""
    if standing.state != CampaignState.IN_TREATMENT:
        return standing.state.value
    if standing.blocked:
        return f"blocked: {standing.blocked}"
    return f"ETA {output.duration(None if standing.eta is None else max(0.0, standing.eta - now))}"


class _Tracked:
    """The campaigns almighty reports on: those not over when it started and those submitted since; a
    purged one is dropped."""

    def __init__(self, store: Store):
        self.store = store
        self.ids: list[int] = []

    def standings(self) -> list[Standing]:
        for campaign in self.store.campaigns(states=[CampaignState.IN_TREATMENT, CampaignState.PAUSED]):
            if campaign.id not in self.ids:
                self.ids.append(campaign.id)
        found = []
        for campaign_id in list(self.ids):
            try:
                found.append(standing(self.store, campaign_id))
            except NotFound:
                self.ids.remove(campaign_id)
        return found


class _Bars:
    """A live bar per campaign, on a terminal: its jobs done out of all its jobs (from the first pass on),
    its throughput and the time left to its estimated end."""

    def __init__(self, store: Store, clock: Clock, console=None):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.clock = clock
        self.tracked = _Tracked(store)
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("{task.fields[left]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self.tasks: dict[int, int] = {}
        self.update()

    def __enter__(self):
        self.bars.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bars.__exit__(*exc)

    def update(self) -> None:
        now = self.clock.now()
        for s in self.tracked.standings():
            shown = {"completed": s.done, "total": s.total, "rate": _rate(s), "left": _left(s, now)}
            if s.campaign_id in self.tasks:
                self.bars.update(self.tasks[s.campaign_id], **shown)
            else:
                self.tasks[s.campaign_id] = self.bars.add_task(f"campaign {s.campaign_id} {s.name}", **shown)


class _Lines:
    """Without a terminal: a line per campaign every ``every`` seconds (after the pass that reaches them) and
    when almighty stops; a campaign that ended is reported once more, then no longer."""

    def __init__(self, store: Store, clock: Clock, every: float):
        self.clock = clock
        self.every = every
        self.tracked = _Tracked(store)
        self.next_at: float | None = None  # None: report after the next pass
        self.unreported = False  # a pass ran since the last report

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.unreported:
            self.report()

    def update(self) -> None:
        self.unreported = True
        if self.next_at is None or self.clock.now() >= self.next_at:
            self.report()

    def report(self) -> None:
        now = self.clock.now()
        for s in self.tracked.standings():
            line = f"campaign {s.campaign_id} {s.name}: {s.done}/{s.total} ({s.percent}%), {_rate(s)}, {_left(s, now)}"
            click.echo(f"{output.when(now)} {line}", err=True)
            if s.state not in (CampaignState.IN_TREATMENT, CampaignState.PAUSED):
                self.tracked.ids.remove(s.campaign_id)
        self.next_at = now + self.every
        self.unreported = False


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


updator = _stage_command("updator", "Collect job states, exit codes and cluster usage; settle finished campaigns.")
spritz = _stage_command("spritz", "Update each campaign's throughput and estimated end.")
metasched = _stage_command(
    "metasched", "Choose which jobs go to which cluster (test campaigns first, then the configured strategy)."
)
runner = _stage_command("runner", "Stop the jobs the metascheduler took back, submit those it chose, and due stages.")
nikita = _stage_command("nikita", "Kill the jobs users cancelled.")

assert {c.name for c in (updator, spritz, metasched, runner, nikita)} == set(cycle_mod.STAGES)
