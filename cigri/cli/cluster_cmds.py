"""gridclusters and its add / set / remove subcommands."""

from __future__ import annotations

import click

from .. import clusters as ops
from ..adapters import registry
from ..secrets import mask
from . import output
from .app import GridGroup, app, common


def _adapter_options(command):
    """One --option per setting any adapter declares; each adapter refuses the ones it does not take."""
    seen: dict[str, tuple[type, dict[str, list[str]]]] = {}
    for adapter_name, adapter in sorted(registry().items()):
        for option in adapter.options:
            kind, helps = seen.setdefault(option.name, (option.type, {}))
            helps.setdefault(option.help, []).append(adapter_name)
    for name, (kind, helps) in reversed(list(seen.items())):
        # an option several adapters declare with different meanings says each, with its adapters
        text = next(iter(helps)) if len(helps) == 1 else "; ".join(f"{', '.join(a)}: {h}" for h, a in helps.items())
        flag = name.replace("_", "-")
        if kind is bool:  # a switch both ways, None when not given (so `set` leaves it as it is)
            command = click.option(f"--{flag}/--no-{flag}", name, default=None, help=text)(command)
        else:
            command = click.option(f"--{flag}", name, type=kind, help=text)(command)
    return command


def _given(options: dict) -> dict:
    return {k: v for k, v in options.items() if v is not None}


@click.group("gridclusters", cls=GridGroup, invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@common
@click.pass_context
def gridclusters(ctx, as_json):
    """List clusters with their usage, or manage them (add, set, remove).

    A new state file has one cluster, 'local': real processes on this machine,
    as many at a time as it has CPUs. State is BLACKLISTED while the admin keeps
    every campaign off a cluster (gridevents --blacklist-cluster).

    Adapters: local (processes of this machine), slurm-ssh (Slurm's commands through
    ssh, or locally without --host), slurm-rest (slurmrestd with a JWT), oar-rest
    (OAR 2.5 or 3 REST API), oar-ssh (oarsub/oarstat/oardel through ssh or locally).

    On Slurm, a batch of jobs is one sbatch --array job, and the JDL maps as:
    /nodes=N/core=C to --nodes=N --ntasks-per-node=C; core=C or /core=C to
    --ntasks=1 --cpus-per-task=C; /resource_id=1 to one CPU; walltime to --time;
    project to --account; properties name='value' (joined by AND) to --constraint
    (other properties are refused); type best-effort to the cluster's
    --besteffort-partition or --besteffort-qos (without them, jobs run normally).

    \b
    Example:
        gridclusters
        gridclusters add big --adapter local --slots 8
        gridclusters add dahu --adapter slurm-ssh --host dahu --identity-file ~/.ssh/id_cigri
        gridclusters set local --slots 4
        gridclusters remove big
    """
    if ctx.invoked_subcommand is not None:
        return
    a = app()
    rows = []
    for u in ops.usage(a.store, a.clock):
        cap = u.capacity
        rows.append(
            {
                "name": u.name,
                "adapter": u.adapter,
                "reachable": u.reachable,
                "slots": cap.total if cap else None,
                "used": cap.used if cap else None,
                "used_by_grid": cap.grid_used if cap else None,
                "queued_by_grid": cap.queued if cap else None,
                "best_effort": u.best_effort,
                "problem": u.problem,
                "blacklisted": a.store.blacklist(None, u.name) is not None,  # by the admin: no new jobs
            }
        )
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ["Cluster", "Adapter", "State", "Slots", "Used", "By grid", "Queued", "Best-effort", "Problem"],
        [
            [
                r["name"],
                r["adapter"],
                "BLACKLISTED" if r["blacklisted"] else "ok" if r["reachable"] and not r["problem"] else "PROBLEM",
                r["slots"],
                r["used"],
                r["used_by_grid"],
                r["queued_by_grid"],
                "yes" if r["best_effort"] else "no (runs normally)",
                r["problem"],
            ]
            for r in rows
        ],
    )


@gridclusters.command("add")
@click.argument("name")
@click.option("--adapter", required=True, help=f"Resource-manager adapter ({', '.join(sorted(registry()))}).")
@_adapter_options
@common
def add(name, adapter, **options):
    """Add a cluster reached through an adapter."""
    ops.add(app().store, name, adapter, _given(options), app().clock)
    click.echo(f"cluster {name} added ({adapter})")


@gridclusters.command("set")
@click.argument("name")
@_adapter_options
@common
def set_(name, **options):
    """Change a cluster's settings."""
    given = _given(options)
    if not given:
        raise click.UsageError("nothing to set: give at least one option")
    config = ops.set_options(app().store, name, given)
    click.echo(f"cluster {name}: " + ", ".join(f"{k}={v}" for k, v in sorted(mask(config).items())))


@gridclusters.command("remove")
@click.argument("name")
@common
def remove(name):
    """Remove a cluster no running campaign uses."""
    a = app()
    ops.remove(a.store, name, a.clock)
    click.echo(f"cluster {name} removed")
