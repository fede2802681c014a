"""almighty and the cycle's stages, each runnable on its own."""

from __future__ import annotations

import click

from .. import cycle as cycle_mod
from ..loop import run_passes
from ..scheduling import registry as schedulers
from .app import GridCommand, app, common


def _cycle(policy: str = "fifo") -> cycle_mod.Cycle:
    from ..prediction import predictor
    from ..scheduling import metascheduler

    a = app()
    return cycle_mod.Cycle(a.store, a.clock, scheduler=metascheduler(policy), forecaster=predictor())


@click.command("almighty", cls=GridCommand)
@click.option("--loop", is_flag=True, help="Repeat passes until interrupted.")
@click.option("--until-done", is_flag=True, help="Repeat passes until every campaign is over or blocked.")
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
    "--policy",
    type=click.Choice(sorted(schedulers())),
    default="fifo",
    show_default=True,
    help="Metascheduler strategy.",
)
@common
def almighty(loop, until_done, period, timeout, policy):
    """Run the cycle: updator, spritz, metasched, runner, nikita.

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
    try:
        with cycle_mod.exclusive(a.store):
            blocked = run_passes(cycle, a.clock, loop=loop, until_done=until_done, period=period, timeout=timeout)
    finally:
        cycle.close()
    for campaign_id, reason in blocked:
        click.echo(f"campaign {campaign_id} is blocked: {reason}", err=True)


def _stage_command(stage: str, doc: str):
    @click.command(
        stage, cls=GridCommand, help=doc + "\n\nRuns this stage of the almighty cycle once, under the almighty lock."
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
    _stage_command("metasched", "Choose which jobs go to which cluster (test campaigns first, then FIFO)."),
    _stage_command("runner", "Submit the jobs the metascheduler chose, and due prologues/epilogues."),
    _stage_command("nikita", "Kill the jobs users cancelled."),
]

assert {c.name for c in STAGE_COMMANDS} == set(cycle_mod.STAGES)
