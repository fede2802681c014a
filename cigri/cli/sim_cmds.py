"""grid simulate."""

from __future__ import annotations

import logging
import sys

import click

from ..errors import ConfigError
from . import output
from .app import GridCommand, app, common, policy_option


def _fmt(seconds) -> str:
    return output.duration(seconds) if seconds is not None else "-"


def _report(m: dict) -> None:
    click.echo(f"scenario {m['scenario']} - policy {m['policy']} - seed {m['seed']}")
    click.echo(
        f"jobs {m['jobs_done']}/{m['jobs']} done, {m['lost']} lost, {m['duplicated']} run twice; "
        f"{m['resubmitted']} resubmitted, {m['wasted_slot_seconds']:.0f} slot-seconds wasted"
    )
    bound = m["makespan_over_bound"]
    click.echo(
        f"makespan {_fmt(m['makespan'])} (lower bounds: work/slots {_fmt(m['lower_bounds']['work_over_slots'])}, "
        f"longest job {_fmt(m['lower_bounds']['longest_job'])}; ratio {bound:.2f})"
        if bound
        else f"makespan {_fmt(m['makespan'])}"
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
                f"{100 * c['utilization']:.1f}%",
                c["started"],
                c["killed"],
                c["black_hole_ends"],
                c["bytes_staged"],
            ]
            for name, c in m["clusters"].items()
        ],
    )
    output.table(
        ["User", "Entitlement", "Usage", "Usage / entitlement"],
        [
            [u, f"{100 * v['share']:.1f}%", f"{100 * v['usage']:.1f}%", f"{v['usage'] / v['share']:.2f}"]
            for u, v in m["users"].items()
        ],
    )
    fairness = m["fairness_jain"]
    click.echo(f"fairness (Jain, usage/entitlement): {fairness:.3f}" if fairness is not None else "fairness: -")
    click.echo(
        f"remote queue: max {m['remote_queue']['max']}, mean {m['remote_queue']['mean']:.1f} jobs; "
        f"bytes staged {m['bytes_staged']}"
    )
    p = m["performance"]
    click.echo(
        f"{m['simulated_seconds']:.0f} simulated s in {p['wall_seconds']:.2f} s "
        f"({p['simulated_per_wall_second']:.0f}x), {1000 * p['mean_pass_seconds']:.1f} ms per pass"
    )


def _plot(simulation, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'cigri[plot]'") from None
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
@click.option("--seed", type=int, help="Random seed (default: the scenario's).")
@click.option("--json", "as_json", is_flag=True, help="All figures as JSON.")
@click.option("--plot", type=click.Path(dir_okay=False), help="Draw completion-time CDFs and utilization to a PNG.")
@common
def simulate(scenario, policy, seed, as_json, plot):
    """Run cigri's real cycle on simulated clusters and a simulated clock.

    The scenario (YAML) names clusters (slots, or nodes with cores and
    properties; speed, delay, failures, outages, local load, black hole),
    users and their shares, and campaigns (arrival, jobs, durations,
    resources and properties as in a JDL), or Eagle/Sparrow traces. Prints completion times (short
    and long campaigns apart), utilization, resubmissions and waste, the
    remote queue, bytes staged, fairness, and the lower bounds.

    \b
    Example:
        grid simulate bench/scenarios/small.yaml
        grid simulate bench/scenarios/trace.yaml --policy fifo --json
    """
    from ..sim.run import Simulation
    from ..sim.scenario import load

    a = app()
    a.setup_logging()
    if not a.verbose:  # cluster events are the point of a simulation, not news: -v shows them
        logging.getLogger("cigri").setLevel(logging.ERROR)

    plan = load(scenario)
    simulation = Simulation(plan, policy=policy, seed=seed)
    progress = None
    if sys.stderr.isatty() and not as_json:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        progress = Progress(TextColumn("simulated {task.fields[t]}"), BarColumn(), MofNCompleteColumn(), transient=True)
        task = progress.add_task("jobs", total=simulation.total_jobs, t="0s")
        progress.start()

        def on_pass(sim):
            progress.update(
                task,
                completed=sum(c.usage.completions.__len__() for c in sim.clusters.values()),
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
