"""gridclusters and its add / set / remove subcommands."""

from __future__ import annotations

import click

from .. import clusters as ops
from ..adapters import registry
from ..secrets import mask
from . import output
from .app import GridGroup, app, common, server_option
from .completion import cluster_names


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


BAR_WIDTH = 40


def _info(source, name: str, as_json: bool) -> None:
    """gridclusters -i NAME: the adapter, the settings (secrets masked), the state and problem as the list
    shows them (the cluster asked now), and the open events."""
    data = source.cluster_info(name)
    if as_json:
        output.emit_json(data)
        return
    output.pairs(
        [
            ("Cluster", data["name"]),
            ("Adapter", data["adapter"]),
            ("State", data["state"]),
            ("Problem", data["problem"] or None),
            *[(f"  {key}", value) for key, value in sorted(data["settings"].items())],
            ("Open events", len(data["events"])),
        ]
    )
    if data["events"]:
        output.table(
            ["Event", "Code", "Campaign", "Message"],
            [[e["id"], e["code"], e["campaign_id"], e["message"]] for e in data["events"]],
        )


def _bar(row: dict) -> str:
    """``[###+++....xxx]``: # the grid's jobs, + others' use, . free, x unavailable, over the cluster's slots."""
    total = row["max"] or 0
    if not total:
        return "[" + " " * BAR_WIDTH + "]"

    def cells(n: int) -> int:
        return round(BAR_WIDTH * min(n, total) / total)

    grid = cells(row["used_by_grid"])
    others = max(0, cells(row["used"]) - grid)
    down = min(cells(row["unavailable"]), BAR_WIDTH - grid - others)
    return "[" + "#" * grid + "+" * others + "." * (BAR_WIDTH - grid - others - down) + "x" * down + "]"


def _show_usage(source, bars: bool, headerless: bool, as_json: bool) -> None:
    rows = source.usage_rows()
    if as_json:
        output.emit_json(rows)
        return
    never = "no usage recorded yet (grid almighty records it)"
    if bars:
        output.table(
            ["Cluster", "Usage (# grid, + others, . free, x unavailable)", "Used/Max"],
            [
                [r["cluster"], _bar(r), f"{r['used']}/{r['max']}"]
                if r["max"] is not None
                else [r["cluster"], never, ""]
                for r in rows
            ],
            headers=not headerless,
        )
        return
    output.table(
        ["Cluster", "Max", "Used", "By grid", "Unavailable", "Recorded"],
        [
            [r["cluster"], r["max"], r["used"], r["used_by_grid"], r["unavailable"], output.when(r["recorded_at"])]
            if r["max"] is not None
            else [r["cluster"], never, "", "", "", ""]
            for r in rows
        ],
        headers=not headerless,
    )


@click.group("gridclusters", cls=GridGroup, invoke_without_command=True)
@click.option(
    "-i",
    "--info",
    metavar="NAME",
    shell_complete=cluster_names,
    help="One cluster: adapter, settings (secrets masked), state, events.",
)
@click.option(
    "-u", "--usage", is_flag=True, help="Each cluster's last recorded usage: max, used, by grid, unavailable."
)
@click.option("-b", "--bars", is_flag=True, help="The same usage as bars.")
@click.option("-H", "--headerless", is_flag=True, help="No header line.")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@server_option
@common
@click.pass_context
def gridclusters(ctx, info, usage, bars, headerless, as_json):
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

    The list asks each cluster now. -u and -b show instead the usage the almighty
    recorded at its last pass (each answering cluster's slots, used, used by the
    grid), without asking; unavailable are the slots its RM reported down, drained
    or failing, and every slot of a cluster that is blacklisted or does not
    answer. -i shows one cluster, asking it as the list does: the same state and
    problem.

    With --server (or CIGRI_SERVER) the list, -i, -u and -b ask a grid serve service
    (which asks its clusters); add, set and remove work on the state file only.

    \b
    Example:
        gridclusters
        gridclusters -i local
        gridclusters --server unix:/run/cigri/api.sock -u
        gridclusters -u
        gridclusters -b
        gridclusters add big --adapter local --slots 8
        gridclusters add dahu --adapter slurm-ssh --host dahu --identity-file ~/.ssh/id_cigri
        gridclusters set local --slots 4
        gridclusters remove big
    """
    if ctx.invoked_subcommand is not None:
        app().through_service(f"gridclusters {ctx.invoked_subcommand}")
        if info or usage or bars or headerless or as_json:
            raise click.UsageError(
                f"-i, -u, -b, -H and --json list clusters: give them without {ctx.invoked_subcommand}"
            )
        return
    if sum((info is not None, usage, bars)) > 1:
        raise click.UsageError("-i, -u and -b exclude each other")
    if headerless and as_json:
        raise click.UsageError("-H drops a table's header: not with --json")
    source = app().source
    if info is not None:
        _info(source, info, as_json)
        return
    if usage or bars:
        _show_usage(source, bars, headerless, as_json)
        return
    rows = source.cluster_rows()
    if as_json:
        output.emit_json(rows)
        return
    output.table(
        ["Cluster", "Adapter", "State", "Slots", "Used", "By grid", "Queued", "Best-effort", "Problem"],
        [
            [
                r["name"],
                r["adapter"],
                r["state"],
                r["slots"],
                r["used"],
                r["used_by_grid"],
                r["queued_by_grid"],
                "yes" if r["best_effort"] else "no (runs normally)",
                r["problem"],
            ]
            for r in rows
        ],
        headers=not headerless,
    )


@gridclusters.command("add")
@click.argument("name")
@click.option("--adapter", required=True, help=f"Resource-manager adapter ({', '.join(sorted(registry()))}).")
@_adapter_options
@common
def add(name, adapter, **options):
    """Add a cluster reached through an adapter.

    \b
    Example:
        gridclusters add big --adapter local --slots 8
        gridclusters add dahu --adapter slurm-ssh --host dahu --user alice --identity-file ~/.ssh/id_cigri
    """
    ops.add(app().store, name, adapter, _given(options), app().clock)
    click.echo(f"cluster {name} added ({adapter})")


@gridclusters.command("set")
@click.argument("name", shell_complete=cluster_names)
@_adapter_options
@common
def set_(name, **options):
    """Change a cluster's settings.

    \b
    Example:
        gridclusters set local --slots 4
        gridclusters set dahu --cache-dir /scratch/alice/cigri-cache --cache-quota 50000000000
    """
    given = _given(options)
    if not given:
        raise click.UsageError("nothing to set: give at least one option")
    config = ops.set_options(app().store, name, given)
    click.echo(f"cluster {name}: " + ", ".join(f"{k}={v}" for k, v in sorted(mask(config).items())))


@gridclusters.command("remove")
@click.argument("name", shell_complete=cluster_names)
@common
def remove(name):
    """Remove a cluster no running campaign uses.

    \b
    Example:
        gridclusters remove big
    """
    a = app()
    ops.remove(a.store, name, a.clock)
    click.echo(f"cluster {name} removed")
