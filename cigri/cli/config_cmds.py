"""grid config: show, set and unset the state's configuration (the metascheduler and flow strategies)."""

from __future__ import annotations

import click
import yaml

from .. import config as ops
from ..errors import ConfigError
from ..secrets import mask
from . import output
from .app import GridGroup, app, common


def _key(key: str, cluster: str | None) -> str:
    """The key ``--cluster`` makes of ``metasched``, ``flow``, ``sensor`` or ``reference``: that cluster's own."""
    if cluster is None:
        return key
    if key not in ops.CLUSTER_KEYS:
        raise ConfigError(f"{key}: --cluster applies to {', '.join(ops.CLUSTER_KEYS)} only")
    return ops.cluster_key(cluster, key)


cluster_option = click.option(
    "--cluster",
    metavar="CLUSTER",
    help=f"The cluster's own value (keys {', '.join(ops.CLUSTER_KEYS)}).",
)


@click.group("config", cls=GridGroup)
@common
def config():
    """Show or change the configuration: which metascheduler strategy decides,
    which flow strategy sizes each cluster's queue, how Spritz predicts, when a
    cluster is a black hole.

    \b
    Keys:
        metasched                   the strategy of every cluster (default fifo)
        metasched.NAME.OPTION       an option of strategy NAME (its VALUE is YAML)
        clusters.CLUSTER.metasched  a cluster's own strategy (or: set metasched NAME --cluster CLUSTER)
        flow                        the flow strategy of every cluster (default constant)
        flow.NAME.OPTION            an option of flow strategy NAME
        clusters.CLUSTER.flow       a cluster's own flow strategy
        clusters.CLUSTER.sensor     waiting (cigri's jobs waiting in its queue; default)
                                    or load:HOST (a file server's 1-minute load)
        clusters.CLUSTER.reference  the value its flow strategy keeps the sensor at
                                    (default: the flow strategy's own)
        nikita.queue_timeout        seconds a job may wait in a queue before nikita
                                    returns it to its bag (default 7200)
        nikita.walltime_grace       seconds a job may run past its walltime before
                                    nikita kills it (default 1800)
        updator.unreachable         seconds a cluster may stay unreachable before its
                                    jobs run elsewhere (default 3600); the copies
                                    left there are killed when it answers (waste)
        spritz                      the predictor of campaigns' ends: window (default) or ewma
        spritz.window               seconds of terminations the throughput is measured over (3600)
        blackhole.streak            that many of a campaign's jobs ending in a row on a
                                    cluster (default 10), each within
        blackhole.seconds           seconds (default 5), while its jobs take a median of
        blackhole.ratio             ratio x seconds or more elsewhere (default 10): the
                                    cluster is a black hole, kept off for the campaign
                                    (event BLACK_HOLE), and those jobs run again elsewhere

    A cluster with its own strategy is decided by it, after the others, for the
    jobs they did not place. Each value is checked by building the strategy with
    it; a refused one changes nothing. almighty --policy and simulate --policy
    (and simulate --flow) override the configuration for one run. metasched.fairshare.half_life is also
    the half-life of users' decayed usage (default 604800 s).

    \b
    Example:
        grid config set metasched srpt
        grid config set metasched.srpt.cutoff 300
        grid config set metasched fairshare --cluster dahu
        grid config set flow pi --cluster dahu
        grid config set sensor load:nfs1 --cluster dahu
        grid config set reference 3 --cluster dahu
        grid config set updator.unreachable 900
        grid config show
    """


@config.command("show")
@click.option("--json", "as_json", is_flag=True, help="JSON output.")
@common
def show(as_json):
    """List the keys set, with their values."""
    settings = mask(app().store.settings())
    if as_json:
        output.emit_json(settings)
        return
    for key, value in sorted(settings.items()):
        click.echo(f"{key}: {yaml.safe_dump(value, default_flow_style=True).strip().removesuffix('...').strip()}")


@config.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
@cluster_option
@common
def set_(key, value, cluster):
    """Set KEY to VALUE (read as YAML: 3 is a number, {a: 1} a mapping)."""
    key = _key(key, cluster)
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        raise ConfigError(f"{key}: {value!r} is not a YAML value") from None
    ops.set_value(app().store, key, parsed)


@config.command("unset")
@click.argument("key")
@cluster_option
@common
def unset(key, cluster):
    """Remove KEY: its default applies again."""
    key = _key(key, cluster)
    if not ops.unset_value(app().store, key):
        click.echo(f"{key} was not set", err=True)
