"""grid config: show the effective configuration, set and unset the state's keys, check a configuration file."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from .. import config as ops
from .. import configfile
from ..errors import ConfigError, NotFound
from ..secrets import mask
from ..wording import counted
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
        metasched                   the strategy of every cluster (default lpt)
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
        updator.unreachable_running the same for its running jobs, which an outage
                                    may have killed (default 300)
        updator.unreachable_tail    the same for its jobs of campaigns with no job left
                                    to launch, running or queued (default 60)
        blacklist.errors            a campaign's job errors close a cluster to it once
        blacklist.window            this many (default 5) of its last window (default
                                    10) ends there failed (1: CiGri's first-error rule)
        spritz                      the predictor of campaigns' ends: window (default) or ewma
        spritz.window               seconds of terminations the throughput is measured over (3600)
        blackhole.streak            that many of a campaign's jobs ending in a row on a
                                    cluster (default 10), each within
        blackhole.seconds           seconds (default 5), while its jobs take a median of
        blackhole.ratio             ratio x seconds or more elsewhere (default 10): the
                                    cluster is a black hole, kept off for the campaign
                                    (event BLACK_HOLE), and those jobs run again elsewhere
        notify.smtp                 host:port of the SMTP server of gridnotify's mails
                                    (env CIGRI_SMTP overrides it)
        notify.sender               the mails' From (default cigri@localhost)
        notify.attempts             tries of a notification, one per pass (default 5)
        notify.timeout              seconds an SMTP or webhook call may take (default 10)
        admission.jobs_per_campaign gridsub refuses a campaign with more jobs
        admission.jobs_per_user     ... a user's unfinished jobs beyond this, new ones included
        admission.test_jobs         ... a test campaign (-t test) with more jobs
        clusters.CLUSTER.users      who may submit campaigns naming CLUSTER (a YAML list)

    \b
    The configuration file (YAML; --config, env CIGRI_CONFIG, default cigri.yaml
    beside the state file) holds the same keys, nested or dotted, and may declare
    clusters (clusters.NAME.adapter and gridclusters add's options; grid config
    check --apply creates them). Its keys override the state's; CIGRI_ variables
    override both: CIGRI_ + the key in capitals, __ for each dot, e.g.
    CIGRI_METASCHED=fairshare, CIGRI_NIKITA__QUEUE_TIMEOUT=600, and
    CIGRI_CLUSTERS__DAHU_2__FLOW=pi for the cluster Dahu-2 (its name lower-cased,
    - read as _). An unknown key is an error naming it; set refuses a key the file
    or the environment gives.

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
        grid config set admission.test_jobs 50
        grid config check cigri.yaml
        grid config show
    """


def _text(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


@config.command("show")
@click.option("--set", "only_set", is_flag=True, help="Only the keys set (state, file or environment), no defaults.")
@click.option("--all", "show_all", is_flag=True, hidden=True)  # the default now; kept for the scripts that give it
@click.option("--json", "as_json", is_flag=True, help="JSON output: key -> effective value.")
@click.option("--origins", is_flag=True, help="With --json: key -> {value, from}.")
@common
def show(only_set, show_all, as_json, origins):
    """List every key with its effective value and where it comes from: default,
    state (grid config set), the configuration file (its path) or the environment
    (its variable). Keys with a cluster's or a strategy's name in them show when set;
    --set lists only the keys set.

    \b
    Example:
        grid config show
        grid config show --set
        CIGRI_METASCHED=fairshare grid config show --json --origins
    """
    if only_set and show_all:
        raise click.UsageError("--set lists only the keys set: give no --all with it")
    a = app()
    store = a.store
    rows = {} if only_set else {key: (value, "default") for key, value in ops.defaults().items()}
    rows.update({key: (value, "state") for key, value in store.state_settings().items()})
    rows.update({key: (store.overrides[key], origin) for key, origin in store.origins.items()})
    shown = {key: (mask({key: value})[key], origin) for key, (value, origin) in sorted(rows.items())}
    if as_json:
        if origins:
            output.emit_json({key: {"value": value, "from": origin} for key, (value, origin) in shown.items()})
        else:
            output.emit_json({key: value for key, (value, _) in shown.items()})
        return
    for key, (value, origin) in shown.items():
        click.echo(f"{key}: {_text(value)}  [{origin}]")
    for line in configfile.pending(store, a.layers):
        click.echo(f"{line} (grid config check --apply)", err=True)


@config.command("check")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@click.option("--apply", "apply_", is_flag=True, help="Create or update the clusters the file declares.")
@common
def check(file, apply_):
    """Check a configuration file (FILE, else the one in use) and the environment's
    CIGRI_ keys against the state, running nothing: exit 0 when good, 4 with the
    file, key and reason when not. --apply then creates or updates the clusters
    it declares (clusters.NAME.adapter and the adapter's options).

    \b
    Example:
        grid config check ~/.local/share/cigri/cigri.yaml
        grid config check --apply
    """
    a = app()
    store = a.bare_store
    try:
        layers = a.load_config(store, None if file is None else Path(file))
    except NotFound as exc:  # a missing file is a configuration error here: exit 4 whatever went wrong
        raise ConfigError(str(exc)) from None
    where = layers.path or "no configuration file"
    lines = configfile.apply(store, layers, a.clock) if apply_ else configfile.pending(store, layers)
    for line in lines:
        click.echo(line if apply_ else f"{line} (--apply to do it)")
    click.echo(
        f"{where}: ok ({counted(len(layers.file), 'key')}, {counted(len(layers.clusters), 'cluster')} declared, "
        f"{len(layers.env)} from the environment)"
    )


@config.command("set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
@cluster_option
@common
def set_(key, value, cluster):
    """Set KEY to VALUE (read as YAML: 3 is a number, {a: 1} a mapping), in the state.

    \b
    Example:
        grid config set metasched fairshare
        grid config set metasched.fairshare.half_life 86400
        grid config set flow pi --cluster dahu
    """
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
    """Remove KEY from the state: its default (or the file's or environment's value) applies again.

    \b
    Example:
        grid config unset nikita.queue_timeout
        grid config unset flow --cluster dahu
    """
    key = _key(key, cluster)
    if not ops.unset_value(app().store, key):
        click.echo(f"{key} was not set", err=True)
