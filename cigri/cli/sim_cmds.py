"""grid simulate."""

from __future__ import annotations

import dataclasses
import logging
import sys

import click

from . import output
from .app import GridCommand, app, common, flow_option, policy_option
from .plot import needs_matplotlib


def _fmt(seconds) -> str:
    return output.duration(seconds) if seconds is not None else "-"


def _report(m: dict) -> None:
    oracle = " (oracle estimates)" if m["oracle"] else ""
    click.echo(
        f"scenario {m['scenario']} - policy {m['policy']}{oracle} - flow {m['flow']['strategy']} - seed {m['seed']}"
    )
    waste = m["waste"]
    click.echo(
        f"jobs {m['jobs_done']}/{m['jobs']} done, {m['lost']} lost, {m['skipped']} skipped (test), "
        f"{m['duplicated']} run twice; {m['resubmitted']} resubmitted, {m['cancelled_queued']} cancelled while queued"
    )
    click.echo(
        f"slot-seconds wasted: {waste['killed']:.0f} killed ({waste['superseded']:.0f} by copies of jobs done "
        f"elsewhere), {waste['failed']:.0f} failed, "
        f"{waste['duplicates']:.0f} duplicates"
    )
    bound = m["makespan_over_bound"]
    bounds = m["lower_bounds"]
    click.echo(
        f"makespan {_fmt(m['makespan'])} (lower bounds: work/available capacity "
        f"{_fmt(bounds['work_over_available_capacity'])}, longest job {_fmt(bounds['longest_job'])}; ratio {bound:.2f})"
        if bound
        else f"makespan {_fmt(m['makespan'])}"
    )
    if m["reference"]:
        click.echo(
            f"offline reference {_fmt(m['reference'])} (longest first, true durations, where each ends earliest); "
            f"makespan {m['makespan_over_reference']:.2f}x the reference"
        )
    output.table(
        ["Campaigns", "n", "p50", "p90", "p99"],
        [[kind, v["n"], _fmt(v["p50"]), _fmt(v["p90"]), _fmt(v["p99"])] for kind, v in m["completion_time"].items()],
        title="Completion time from submission",
    )
    output.table(
        ["Cluster", "Slots", "Utilization", "Started", "Killed", "Black-hole ends", "Bytes staged"],
        [
            [
                name,
                c["slots"],
                _percent(c["utilization"]),
                c["started"],
                c["killed"],
                c["black_hole_ends"],
                c["bytes_staged"],
            ]
            for name, c in m["clusters"].items()
        ],
    )
    click.echo(f"utilization (completed work / capacity available to the grid): {_percent(m['utilization'])}")
    output.table(
        ["User", "Entitlement", "Usage", "Max-min fair share", "Usage / fair share"],
        [
            [
                u,
                _percent(v["share"]),
                _percent(v["usage"]),
                _percent(v["fair_share"]),
                f"{v['usage'] / v['fair_share']:.2f}" if v["fair_share"] else "-",
            ]
            for u, v in m["users"].items()
        ],
    )
    fairness = m["fairness_maxmin_jain"]
    click.echo(f"fairness (Jain, usage/max-min fair share): {fairness:.3f}" if fairness is not None else "fairness: -")
    click.echo(
        f"remote queue: max {m['remote_queue']['max']}, mean {m['remote_queue']['mean']:.1f} jobs; "
        f"bytes staged {m['bytes_staged']}"
    )
    _flow_report(m)
    click.echo("estimated end's error, median % of the time left (campaigns judged): " + _eta_errors(m["eta_error"]))
    p = m["performance"]
    click.echo(
        f"{m['simulated_seconds']:.0f} simulated s in {p['wall_seconds']:.2f} s "
        f"({p['simulated_per_wall_second']:.0f}x), {1000 * p['mean_pass_seconds']:.1f} ms per pass"
    )


def _flow_report(m: dict) -> None:
    flow = m["flow"]
    output.table(
        ["Cluster", "Queued slots mean", "p99", "Passes over allowance", "Queued jobs cancelled", "Local wait"],
        [
            [
                name,
                f"{c['waiting_mean']:.1f}",
                f"{c['waiting_p99']:.0f}",
                _percent(c["over_allowance"]),
                m["clusters"][name]["cancelled_queued"],
                f"{c['local_wait_core_seconds']:.0f} core-s",
            ]
            for name, c in flow["clusters"].items()
        ],
        title=f"Flow ({flow['strategy']}): grid jobs queued at each pass",
    )
    server = flow["file_server"]
    if server is not None:
        above = server["time_above_reference"]
        click.echo(
            f"file server {server['host']}: load mean {server['mean_load']:.2f}, peak {server['peak_load']:.2f}"
            + (
                f"; above its reference {server['reference']:g} {_percent(above)} of the time"
                if above is not None
                else ""
            )
        )


def _eta_errors(errors: dict) -> str:
    """At 25, 50, 75 % of each campaign's jobs done (see cigri.sim.run.eta_errors)."""
    parts = []
    for mark, figures in errors.items():
        median = figures["median_pct"]
        parts.append(f"at {mark} % {'-' if median is None else f'{median:.1f} %'} ({figures['n']})")
    return ", ".join(parts)


def _percent(fraction: float | None) -> str:
    return f"{100 * fraction:.1f}%" if fraction is not None else "-"


def _plot(simulation, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise needs_matplotlib("--plot") from None
    m = simulation.result
    fig, (cdf, util) = plt.subplots(1, 2, figsize=(11, 4))
    for kind in ("short", "long"):
        times = sorted(
            c["completion_time"] for c in m["campaigns"] if c["kind"] == kind and c["completion_time"] is not None
        )
        if times:  # from (0, 0), so that a single campaign still draws its step
            fractions = [(i + 1) / len(times) for i in range(len(times))]
            cdf.step([0.0, *times], [0.0, *fractions], where="post", label=f"{kind} ({len(times)})")
    cdf.set(xlabel="completion time (s)", ylabel="fraction of campaigns", title="Completion time CDF")
    cdf.legend()
    for name, series in simulation.trace.utilization.items():
        util.plot(simulation.trace.times, series, label=name, linewidth=0.8)
    util.set(xlabel="simulated time (s)", ylabel="grid slots busy / slots", title="Utilization")
    if len(simulation.trace.utilization) <= 10:
        util.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


@click.command("simulate", cls=GridCommand)
@click.argument("scenario", type=click.Path(dir_okay=False))
@policy_option
@flow_option
@click.option("--seed", type=int, help="Random seed, the campaigns' durations included (default: the scenario's).")
@click.option(
    "--oracle",
    is_flag=True,
    help="Hand the strategies each campaign's true mean job duration as its estimate (as Eagle assumes), "
    "instead of what cigri learns from the jobs that ended.",
)
@click.option("--json", "as_json", is_flag=True, help="All figures as JSON.")
@click.option("--plot", type=click.Path(dir_okay=False), help="Draw completion-time CDFs and utilization to a PNG.")
@click.option(
    "--stall",
    type=click.FloatRange(min=1),
    metavar="SECONDS",
    help="Stop with an error naming what is stuck after that long (simulated) without a job starting or "
    "ending or a campaign changing state (default: the scenario's stall, or a day).",
)
@common
def simulate(scenario, policy, flow, seed, oracle, as_json, plot, stall):
    """Run cigri's real cycle on simulated clusters and a simulated clock.

    The scenario (YAML) names clusters (slots, or nodes with cores and
    properties; speed, delay, failures, outages, local load, black hole),
    users and their shares, the state's grid config (config: the strategies
    and their options; --policy overrides the strategy), and campaigns (arrival, jobs, durations,
    resources and properties as in a JDL), or Eagle/Sparrow traces. Prints completion times (short
    and long campaigns apart), utilization, resubmissions and waste, the
    remote queue, bytes staged, fairness, the lower bounds and an offline
    reference (longest job first with true durations, on the capacity the
    clusters really had, where each job ends earliest), all from
    what the simulated clusters ran: done jobs ran to a real end somewhere;
    utilization is completed work over the capacity left to the grid
    (outages and local users' load removed), waste apart; fairness is Jain's
    index of usage over each user's demand-capped (max-min) fair share, the
    shares being the fairshare strategy's configured ones, else the scenario's
    users' (equal unless given). The estimated end's error is judged at the
    first pass after the clusters completed 25, 50 and 75 % of a campaign's
    jobs: |estimate - true end| / (true end - that pass), the median over
    the campaigns that completed. Campaigns are short when their true mean job
    duration is at most the scenario's short_cutoff (default 600 s).

    The flow strategies (config: flow keys; --flow overrides them) are judged
    on the simulated queues, sampled before each pass: grid slots queued per
    cluster (mean, p99), the passes where they exceeded what the flow allowed,
    the queued jobs the clusters were asked to cancel, local users' wait
    (core-seconds their jobs waited while grid jobs held cores), and, with a
    file_server, its load and the time it spent above its reference.

    \b
    Example:
        grid simulate bench/scenarios/small.yaml
        grid simulate bench/scenarios/trace.yaml --policy fifo --json
        grid simulate bench/scenarios/trace.yaml --policy fifo --oracle
        grid simulate bench/scenarios/small.yaml --flow constant
    """
    from ..sim.run import Simulation
    from ..sim.scenario import load

    a = app()
    a.setup_logging()
    if not a.verbose:  # cluster events are the point of a simulation, not news: -v shows them
        logging.getLogger("cigri").setLevel(logging.ERROR)

    plan = load(scenario, seed=seed)
    if stall is not None:
        plan = dataclasses.replace(plan, stall=stall)
    simulation = Simulation(plan, policy=policy, oracle=oracle, flow=flow)  # the seed is the plan's
    progress = None
    if sys.stderr.isatty() and not as_json:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        progress = Progress(TextColumn("simulated {task.fields[t]}"), BarColumn(), MofNCompleteColumn(), transient=True)
        task = progress.add_task("jobs", total=simulation.total_jobs, t="0s")
        progress.start()

        def on_pass(sim):
            progress.update(
                task,
                completed=len(sim.ledger.completed),
                t=output.duration(sim.clock.now()),
            )
    else:
        on_pass = None
    try:
        simulation.result = simulation.run(on_pass)
    finally:
        if progress:
            progress.stop()
        simulation.cycle.close()
    if plot:
        _plot(simulation, plot)
    if as_json:
        output.emit_json(simulation.result)
    else:
        _report(simulation.result)
