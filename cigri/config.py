"""The state's configuration (``grid config``): which metascheduler strategy decides, with which options,
and which flow strategy sizes each cluster's queue, on which sensor.

Keys, each checked when set (an unknown key or a value the strategy refuses is a ConfigError naming it,
and nothing is written):

- ``metasched``: the strategy of every cluster without its own (default ``lpt``, the longest work first where
  it shortens the makespan; ``fifo`` is CiGri's order);
- ``metasched.NAME.OPTION``: an option of strategy NAME, checked by building NAME with it
  (``metasched.fairshare.half_life`` is also the half-life of users' decayed usage in the snapshot);
- ``clusters.CLUSTER.metasched``: a cluster's own strategy. Such clusters are decided by it, after the
  others, on a snapshot restricted to them;
- ``flow``: the flow strategy of every cluster without its own (default ``constant``: the cluster's
  ``queue_depth``);
- ``flow.NAME.OPTION``: an option of flow strategy NAME, checked by building NAME with it;
- ``clusters.CLUSTER.flow``: a cluster's own flow strategy;
- ``clusters.CLUSTER.sensor``: what its flow strategy reads besides the queue: ``waiting`` (cigri's jobs
  waiting in the cluster's queue, from the RM; the default) or ``load:HOST`` (the 1-minute load of the
  file-server HOST, read through the cluster's transport);
- ``clusters.CLUSTER.reference``: the value the flow strategy keeps its sensor at (a number; without it,
  the strategy's own default, e.g. pi's and ip's ``reference`` option);
- ``nikita.queue_timeout``: seconds a job may wait in a cluster's queue before nikita kills it and returns
  it to its bag (default :attr:`cigri.cycle.Patience.queue_timeout`, two hours);
- ``nikita.walltime_grace``: seconds a job may run past its walltime before nikita kills it as a walltime kill
  (default :attr:`cigri.cycle.Patience.walltime_grace`, CiGri's 30 minutes);
- ``updator.unreachable``: seconds a cluster may stay unreachable before its grid jobs run again elsewhere
  (default :attr:`cigri.cycle.Patience.unreachable`, an hour); the copies left there are killed once it
  answers again, and counted as the campaign's waste (``gridstat -c``);
- ``updator.unreachable_running``: the same for its running jobs alone, which an outage may have killed
  (default :attr:`cigri.cycle.Patience.unreachable_running`, 5 minutes; never more than
  ``updator.unreachable``): waiting an hour to know would cost the campaign that hour, a copy that loses
  costs the slots it held;
- ``updator.unreachable_tail``: the same for the jobs there, running or queued, of a campaign with no job
  left to launch (default :attr:`cigri.cycle.Patience.unreachable_tail`, a minute; never more than
  ``updator.unreachable``): no other job of theirs would use the slots elsewhere meanwhile, so
  waiting costs the campaign's end what it waits, and a copy elsewhere costs only idle slots;
- ``resubmit.max_attempts``: runs of a job that end asking to run again (an RM kill other than a preemption,
  exit 66 or 67) before it is a RESUBMIT_LIMIT event (default 3; a campaign's JDL ``max_attempts`` wins);
- ``resubmit.max_resumes``: times a job may go back without a failure (preempted by its RM, checkpointed)
  before it is a RESUBMIT_LIMIT event all the same (default 20: nothing loops for ever);
- ``resubmit.failure_window`` and ``resubmit.failure_rate``: a campaign more than ``failure_rate`` (default
  0.5) of whose last ``failure_window`` (default 20, at least 10) ends failed is paused with a FAILURE_RATE
  event;
- ``blacklist.errors`` and ``blacklist.window``: a campaign's job errors on a cluster keep it off that cluster
  (a BLACKLIST event, until fixed) once ``errors`` (default 5) of its last ``window`` (default 10) ends there
  failed (a job that used all its attempts there closes it at once); below, each failed job is an event of
  its own and the campaign goes on there (CiGri's rule, a blacklist at the first error: ``blacklist.errors``
  1);
- ``resubmit.error_retries``: below that threshold, a job's error (a non-zero exit, not out of memory) runs
  the job again at once on another of its campaign's clusters, this many times (default 1), before an error
  of it waits for the user; its EXIT_ERROR event is kept, closed. A campaign with a single cluster, or 0,
  is CiGri's rule: every error waits for the user;
- ``checkpoint.exit_code``: the exit status meaning "checkpointed, resume me" for campaigns whose JDL does not
  give ``checkpointing_exit_code`` (default 68);
- ``spritz``: the predictor of campaigns' ends (default ``window``, see :mod:`cigri.prediction`);
  ``spritz.window``: the seconds of terminations its throughput is measured over (default 3600);
- ``blackhole.streak``, ``blackhole.seconds``, ``blackhole.ratio``: the black-hole detector's thresholds
  (see :class:`BlackHoles`);
- ``notify.smtp`` (``host:port``), ``notify.sender``, ``notify.attempts``, ``notify.timeout``: how gridnotify's
  mails and webhooks are sent (:mod:`cigri.notify`);
- ``admission.jobs_per_campaign``, ``admission.jobs_per_user``, ``admission.test_jobs`` and
  ``clusters.CLUSTER.users``: the admission rules gridsub checks (:func:`cigri.campaigns.admit`);
- ``locality``: which waiting jobs of a campaign with input files each cluster gets, once the metascheduler
  said how many: ``cursors`` (the default: the teams-and-cursors redesign of BOINC's locality scheduling),
  ``locality`` (BOINC's locality scheduling) or ``in-order`` (lowest ids first, as for campaigns without input
  files); see :mod:`cigri.scheduling.locality`. Both ``cursors`` (the default) and ``locality`` staged at
  most 1.05x the bytes of the lower bound, with makespans within 1.1 % of in-order's, both where consecutive
  jobs share a file and where jobs read contiguous ranges of a file sequence (``docs/benchmarks.md``,
  ``bench/run_locality.py``); ``locality`` keeps no state and suits campaigns whose jobs read their files in no
  order related to their ids;
- ``locality.generator_wait``: seconds a campaign's ``work_generator`` may take to answer (default 30).

The state holds the keys ``grid config set`` records; the configuration file and the environment override
them (:mod:`cigri.configfile`, through ``Store.overrides``): every reader of ``store.settings()`` sees the
effective value.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import adapters
from . import flow as flows
from .errors import ConfigError, JdlError, NotFound
from .jdl import exit_code
from .prediction import WINDOW, Predictor, predictor
from .scheduling import MetaScheduler, locality, metascheduler, registry
from .scheduling.locality import JobPicker
from .store import Store

DEFAULT_STRATEGY = "lpt"
DEFAULT_FLOW = flows.Constant.name
DEFAULT_HALF_LIFE = 604800.0  # seconds: a week, Slurm's PriorityDecayHalfLife default
HALF_LIFE_KEY = "metasched.fairshare.half_life"
_OPTION = re.compile(r"^metasched\.([^.]+)\.(.+)$")
_CLUSTER = re.compile(r"^clusters\.(.+)\.metasched$")
_FLOW_OPTION = re.compile(r"^flow\.([^.]+)\.(.+)$")
_CLUSTER_FLOW = re.compile(r"^clusters\.(.+)\.(flow|sensor|reference)$")
QUEUE_TIMEOUT = "nikita.queue_timeout"
WALLTIME_GRACE = "nikita.walltime_grace"
# issue 12, item 1 (events): how long a cluster may stay unreachable before its jobs run elsewhere
UNREACHABLE = "updator.unreachable"
# issue 21, item 3: the running jobs of a silent cluster may be dead, they run again elsewhere sooner
UNREACHABLE_RUNNING = "updator.unreachable_running"
# issue 21, item 3: the jobs there of a campaign with none left to launch, sooner
UNREACHABLE_TAIL = "updator.unreachable_tail"
# the keys in seconds, at least this
_SECONDS = {QUEUE_TIMEOUT: 1, WALLTIME_GRACE: 0, UNREACHABLE: 0, UNREACHABLE_RUNNING: 0, UNREACHABLE_TAIL: 0}
# item 2 and 4 of issue 12 (resubmission, checkpoints): each key with its default and its check
MAX_ATTEMPTS = "resubmit.max_attempts"
MAX_RESUMES = "resubmit.max_resumes"
FAILURE_WINDOW = "resubmit.failure_window"
FAILURE_RATE = "resubmit.failure_rate"
CHECKPOINT_EXIT = "checkpoint.exit_code"
# issue 21, item 6: a campaign's job errors close a cluster to it past a threshold, not at the first one
BLACKLIST_ERRORS = "blacklist.errors"
BLACKLIST_WINDOW = "blacklist.window"
# a job error below the blacklist's threshold runs the job again elsewhere, this many times, before the user
ERROR_RETRIES = "resubmit.error_retries"
RESUBMIT_DEFAULTS: dict[str, int | float] = {
    MAX_ATTEMPTS: 3,
    MAX_RESUMES: 20,
    FAILURE_WINDOW: 20,
    FAILURE_RATE: 0.5,
    CHECKPOINT_EXIT: 68,
    BLACKLIST_ERRORS: 5,
    BLACKLIST_WINDOW: 10,
    ERROR_RETRIES: 1,
}
_RESUBMIT_MINIMUM = {
    MAX_ATTEMPTS: 1,
    MAX_RESUMES: 1,
    FAILURE_WINDOW: 10,
    BLACKLIST_ERRORS: 1,
    BLACKLIST_WINDOW: 1,
    ERROR_RETRIES: 0,
}
# ---- issue 14, items 2 and 3 (the user's side): notifications and admission rules ------------------------
SMTP = "notify.smtp"  # host:port of the SMTP server mails go through (CIGRI_SMTP overrides it)
NOTIFY_DEFAULTS: dict[str, Any] = {
    SMTP: None,
    "notify.sender": "cigri@localhost",  # the mails' From
    "notify.attempts": 5,  # tries of a notification (one per pass) before it is given up
    "notify.timeout": 10.0,  # seconds an SMTP or webhook call may take
}
NOTIFY_KEYS = tuple(NOTIFY_DEFAULTS)
ADMISSION_KEYS = ("admission.jobs_per_campaign", "admission.jobs_per_user", "admission.test_jobs")
_CLUSTER_USERS = re.compile(r"^clusters\.(.+)\.users$")  # who may submit campaigns naming the cluster
KEYS = (
    "metasched, metasched.NAME.OPTION, clusters.CLUSTER.metasched, flow, flow.NAME.OPTION, "
    f"clusters.CLUSTER.flow, clusters.CLUSTER.sensor, clusters.CLUSTER.reference, {QUEUE_TIMEOUT}, {WALLTIME_GRACE}, "
    f"{UNREACHABLE}, {UNREACHABLE_RUNNING}, {UNREACHABLE_TAIL}, spritz, spritz.window, blackhole.streak, "
    "blackhole.seconds, blackhole.ratio, locality, locality.generator_wait, "
    + ", ".join(RESUBMIT_DEFAULTS)
    + ", "
    + ", ".join((*NOTIFY_KEYS, *ADMISSION_KEYS))
    + ", clusters.CLUSTER.users"
)
CLUSTER_KEYS = ("metasched", "flow", "sensor", "reference", "users")  # the keys a cluster may have of its own
WAITING = "waiting"  # the default sensor: cigri's jobs waiting in the cluster's queue
LOAD = "load:"  # the sensor ``load:HOST``: the 1-minute load of a file-server host
_HOST = re.compile(r"[A-Za-z0-9_\[][A-Za-z0-9_.:\[\]-]*")  # a host name or address (never an ssh option)
SPRITZ_KEYS = ("spritz", "spritz.window")


def resubmit_value(settings: Mapping[str, Any], key: str) -> int | float:
    """A resubmission or checkpoint key's value, else its default (ConfigError for a value it cannot take)."""
    value = settings.get(key, RESUBMIT_DEFAULTS[key])
    if key == FAILURE_RATE:
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
            raise ConfigError(f"{key}: expected a fraction between 0 and 1 (exclusive), got {value!r}")
        return float(value)
    if key == CHECKPOINT_EXIT:
        try:
            return exit_code(value, key)
        except JdlError as exc:
            raise ConfigError(str(exc)) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < _RESUBMIT_MINIMUM[key]:
        raise ConfigError(f"{key}: expected a whole number, at least {_RESUBMIT_MINIMUM[key]}, got {value!r}")
    return value


def cluster_key(cluster: str, key: str = "metasched") -> str:
    return f"clusters.{cluster}.{key}"


def options(settings: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The configured options of strategy ``name``."""
    prefix = f"metasched.{name}."
    return {key.removeprefix(prefix): value for key, value in settings.items() if key.startswith(prefix)}


def build(settings: Mapping[str, Any], name: str) -> MetaScheduler:
    """Strategy ``name`` with its configured options (ConfigError for an unknown name or a bad option)."""
    return metascheduler(name, options(settings, name))


def forecaster(settings: Mapping[str, Any]) -> Predictor:
    """The configured predictor (``spritz``, ``spritz.window``)."""
    return predictor(settings.get("spritz", "window"), settings.get("spritz.window", WINDOW))


def _known(key: str) -> bool:
    return (
        key in ("metasched", "flow", *SPRITZ_KEYS)
        or key in _SECONDS
        or key in BLACKHOLE_KEYS
        or key in LOCALITY_KEYS
        or key in RESUBMIT_DEFAULTS
        or key in NOTIFY_DEFAULTS
        or key in ADMISSION_KEYS
        or any(pattern.match(key) for pattern in (_OPTION, _CLUSTER, _FLOW_OPTION, _CLUSTER_FLOW, _CLUSTER_USERS))
    )


@dataclass(frozen=True)
class Patience:
    """How long the cycle lets jobs wait where they are before it places them elsewhere, in seconds. The
    defaults (the README's) suit a real grid: a queue that moves keeps its jobs, one that does not loses them."""

    queue_grace: float = 300  # cigri's queued jobs not starting this long: no queue allowance there
    queue_wait: float = 1800  # a job pending longer is taken back when another cluster could start it now
    avoid: float = 3600  # a job killed or taken back by a cluster is not sent there again for this long
    unreachable: float = 3600  # the jobs of a cluster unreachable this long run again elsewhere
    unreachable_running: float = 300  # its running ones (an outage may have killed them), this long
    unreachable_tail: float = 60  # those of a campaign with no job left to launch (running or queued), this long
    queue_timeout: float = 7200  # a job pending longer is killed by nikita and returned to its bag, whatever
    walltime_grace: float = 1800  # a job running this long past its walltime is killed by nikita (CiGri's)


def known(key: str) -> bool:
    """Whether ``key`` is a configuration key (the file's and the environment's keys are checked with it)."""
    return _known(key)


def defaults() -> dict[str, Any]:
    """The default of each fixed key (the keys with a cluster's or a strategy's name in them have none)."""
    patience, holes = Patience(), BlackHoles()
    return {
        "metasched": DEFAULT_STRATEGY,
        HALF_LIFE_KEY: DEFAULT_HALF_LIFE,
        "flow": DEFAULT_FLOW,
        QUEUE_TIMEOUT: patience.queue_timeout,
        WALLTIME_GRACE: patience.walltime_grace,
        UNREACHABLE: patience.unreachable,
        UNREACHABLE_RUNNING: patience.unreachable_running,
        UNREACHABLE_TAIL: patience.unreachable_tail,
        "spritz": "window",
        "spritz.window": WINDOW,
        "blackhole.streak": holes.streak,
        "blackhole.seconds": holes.seconds,
        "blackhole.ratio": holes.ratio,
        **RESUBMIT_DEFAULTS,
        **NOTIFY_DEFAULTS,
        **dict.fromkeys(ADMISSION_KEYS),
        "locality": DEFAULT_PICKER,
        "locality.generator_wait": DEFAULT_GENERATOR_WAIT,
    }


def _refuse_unknown(key: str) -> None:
    if not _known(key):
        raise ConfigError(f"{key}: unknown configuration key (valid: {KEYS})")


def check_value(
    store: Store, settings: Mapping[str, Any], key: str, value: Any, declared: Collection[str] = ()
) -> None:
    """Check ``key``'s ``value`` in the configuration ``settings`` (which holds it): the strategy it names (or
    whose option it is) must build with its options; a cluster's key needs the cluster, in the state or among
    the ``declared`` ones (the configuration file's)."""
    _refuse_unknown(key)
    if key in _SECONDS:
        seconds(settings, key, 0.0)
    elif key in SPRITZ_KEYS:
        forecaster(settings)
    elif key in BLACKHOLE_KEYS:
        black_holes(settings)
    elif key in LOCALITY_KEYS:
        job_picker(settings)
        generator_wait(settings)
    elif key in RESUBMIT_DEFAULTS:
        resubmit_value(settings, key)
    elif key in NOTIFY_KEYS or key in ADMISSION_KEYS or _CLUSTER_USERS.match(key):
        _check_user_side(store, key, value, declared)
    elif (match := _OPTION.match(key)) is not None:
        build(settings, match.group(1))
    elif key == "flow" or key.startswith("flow.") or _CLUSTER_FLOW.match(key):
        _check_flow(store, settings, key, value, declared)
    else:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a strategy name, got {value!r}")
        if (match := _CLUSTER.match(key)) is not None:
            _need_cluster(store, key, match.group(1), declared)
        build(settings, value)


def set_value(store: Store, key: str, value: Any) -> None:
    """Record ``key`` in the state once the configuration it makes is checked (:func:`check_value`). A key
    the configuration file or the environment gives is refused: theirs would win."""
    _refuse_unknown(key)
    if key in store.overrides:
        raise ConfigError(f"{key}: set by {origin_of(store, key)}, which overrides the state; change it there")
    check_value(store, {**store.settings(), key: value}, key, value)
    with store.transaction():
        store.set_setting(key, value)


def origin_of(store: Store, key: str) -> str:
    """Where an overridden key comes from, as :mod:`cigri.configfile` recorded it (file path or variable)."""
    return store.origins.get(key, "the configuration file")


def _need_cluster(store: Store, key: str, cluster: str, declared: Collection[str]) -> None:
    if cluster not in declared and not store.has_cluster(cluster):
        raise NotFound(f"{key}: no cluster named {cluster!r}")


def unset_value(store: Store, key: str) -> bool:
    """Remove ``key`` (a known one); whether it was set. A registered strategy that needs the option
    refuses its removal."""
    _refuse_unknown(key)
    settings = store.state_settings()
    settings.pop(key, None)
    settings.update(store.overrides)
    if (match := _OPTION.match(key)) is not None and match.group(1) in registry():
        build(settings, match.group(1))
    if (match := _FLOW_OPTION.match(key)) is not None and match.group(1) in flows.registry():
        build_flow(settings, match.group(1))
    with store.transaction():
        return store.unset_setting(key)


def half_life(settings: Mapping[str, Any]) -> float:
    """The half-life of users' decayed usage, in seconds."""
    return float(settings.get(HALF_LIFE_KEY, DEFAULT_HALF_LIFE))


def seconds(settings: Mapping[str, Any], key: str, default: float) -> float:
    """A key's value in seconds (the nikita keys, ``updator.unreachable``), else ``default`` (ConfigError for a
    value that is not seconds)."""
    value = settings.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < _SECONDS[key]:
        raise ConfigError(f"{key}: expected seconds, at least {_SECONDS[key]}, got {value!r}")
    return float(value)


# ---- issue 12, item 3: black holes (cigri.cycle.blackhole) ------------------------------------------------


@dataclass(frozen=True)
class BlackHoles:
    """When a cluster is a black hole for a campaign (the seed's sink effect): ``streak`` of its jobs in a row
    ended there within ``seconds`` each (whatever their exit status), while its jobs elsewhere (or there,
    before) take a median of at least ``ratio`` x ``seconds`` (see :mod:`cigri.cycle.blackhole`). The
    defaults suit a real grid: 10 jobs in a row under 5 s while the campaign's jobs take 50 s or more
    elsewhere; a campaign whose jobs take seconds everywhere is never blacklisted."""

    streak: int = 10
    seconds: float = 5.0
    ratio: float = 10.0

    @property
    def reference(self) -> float:
        """The median duration elsewhere from which a streak is a black hole."""
        return self.ratio * self.seconds


BLACKHOLE_KEYS = ("blackhole.streak", "blackhole.seconds", "blackhole.ratio")


def black_holes(settings: Mapping[str, Any]) -> BlackHoles:
    """The configured thresholds (``blackhole.streak``: a whole number >= 1; ``blackhole.seconds``: > 0;
    ``blackhole.ratio``: >= 1), a ConfigError naming the key for any other value."""
    default = BlackHoles()
    streak = settings.get("blackhole.streak", default.streak)
    if isinstance(streak, bool) or not isinstance(streak, int) or streak < 1:
        raise ConfigError(f"blackhole.streak: expected a whole number of jobs, at least 1, got {streak!r}")
    figures = {}
    for name, low, strict in (("seconds", 0.0, True), ("ratio", 1.0, False)):
        value = settings.get(f"blackhole.{name}", getattr(default, name))
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if not number or value < low or (strict and value == low):
            bound = f"more than {low:g}" if strict else f"at least {low:g}"
            raise ConfigError(f"blackhole.{name}: expected a number, {bound}, got {value!r}")
        figures[name] = float(value)
    return BlackHoles(streak, **figures)


# ---- issue 13, items 3 and 4: job pickers and on-demand work (cigri.scheduling.locality, .cursors) ---------

LOCALITY_KEYS = ("locality", "locality.generator_wait")
DEFAULT_GENERATOR_WAIT = 30.0  # seconds
DEFAULT_PICKER = "cursors"  # measured: see the docstring's ``locality`` key


def job_picker(settings: Mapping[str, Any]) -> JobPicker:
    """The configured job picker for campaigns with input files (``locality``, default ``cursors``)."""
    name = settings.get("locality", DEFAULT_PICKER)
    if not isinstance(name, str):
        raise ConfigError(f"locality: expected a job picker's name, got {name!r}")
    return locality.picker(name)


def generator_wait(settings: Mapping[str, Any]) -> float:
    """Seconds a work generator may take (``locality.generator_wait``: a number > 0, default 30)."""
    value = settings.get("locality.generator_wait", DEFAULT_GENERATOR_WAIT)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"locality.generator_wait: expected seconds, more than 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Strategies:
    """Who decides in a pass: ``main`` for every cluster not in ``own``; ``own`` maps a strategy name to the
    strategy and the clusters configured to use it."""

    main: MetaScheduler
    own: Mapping[str, tuple[MetaScheduler, tuple[str, ...]]]


def strategies(store: Store, override: MetaScheduler | None = None) -> Strategies:
    """The strategies of this pass: ``override`` (``--policy``) everywhere, else the configuration's."""
    if override is not None:
        return Strategies(override, {})
    settings = store.settings()
    main_name = settings.get("metasched", DEFAULT_STRATEGY)
    main = build(settings, main_name)
    clusters: dict[str, list[str]] = {}
    for key, name in sorted(settings.items()):
        if (match := _CLUSTER.match(key)) and name != main_name and store.has_cluster(match.group(1)):
            clusters.setdefault(name, []).append(match.group(1))
    return Strategies(main, {name: (build(settings, name), tuple(names)) for name, names in clusters.items()})


def flow_options(settings: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The configured options of flow strategy ``name``."""
    prefix = f"flow.{name}."
    return {key.removeprefix(prefix): value for key, value in settings.items() if key.startswith(prefix)}


def build_flow(settings: Mapping[str, Any], name: str) -> flows.Flow:
    """Flow strategy ``name`` with its configured options (ConfigError for an unknown name or a bad option)."""
    return flows.flow(name, flow_options(settings, name))


def sensor_host(key: str, value: Any) -> str | None:
    """The file-server host a sensor reads (``load:HOST``), None for ``waiting``; ConfigError naming ``key``
    for anything else."""
    if value == WAITING:
        return None
    if isinstance(value, str) and value.startswith(LOAD) and _HOST.fullmatch(value[len(LOAD) :]):
        return value[len(LOAD) :]
    raise ConfigError(f"{key}: expected {WAITING} or {LOAD}HOST, got {value!r}")


def _check_flow(
    store: Store, settings: Mapping[str, Any], key: str, value: Any, declared: Collection[str] = ()
) -> None:
    """The flow keys: a strategy name that builds with its options, an option it accepts, a sensor, a
    reference; a cluster's key needs the cluster."""
    if (match := _FLOW_OPTION.match(key)) is not None:
        build_flow(settings, match.group(1))
        return
    if (match := _CLUSTER_FLOW.match(key)) is not None:
        _need_cluster(store, key, match.group(1), declared)
    what = match.group(2) if match is not None else "flow"
    if what == "sensor":
        if sensor_host(key, value) is not None and match is not None and store.has_cluster(match.group(1)):
            _check_reads_load(store, key, match.group(1))
    elif what == "reference":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(f"{key}: expected a number >= 0, got {value!r}")
    else:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a flow strategy name, got {value!r}")
        build_flow(settings, value)


def _check_reads_load(store: Store, key: str, cluster: str) -> None:
    """A file server's load is read through the cluster's transport: its adapter must have one."""
    adapter = store.cluster(cluster).adapter
    if adapter in adapters.registry() and not hasattr(adapters.adapter_class(adapter), "server_load"):
        raise ConfigError(f"{key}: the {adapter} adapter of {cluster} has no transport to read a host's load")


@dataclass(frozen=True)
class ClusterFlow:
    """How a cluster's queue allowance is set: its flow strategy, the file-server host its sensor reads
    (None: cigri's jobs waiting in its queue) and the sensor's reference (None: not configured)."""

    strategy: flows.Flow
    host: str | None = None
    reference: float | None = None


def cluster_flows(store: Store, names: Sequence[str], override: str | None = None) -> dict[str, ClusterFlow]:
    """Each named cluster's flow: ``override`` (``--flow``, with its configured options) everywhere, else its
    own strategy, else ``flow`` (default constant); its sensor and reference in either case."""
    settings = store.settings()
    built: dict[str, flows.Flow] = {}
    out = {}
    for cluster in names:
        name = override or settings.get(cluster_key(cluster, "flow"), settings.get("flow", DEFAULT_FLOW))
        if name not in built:
            built[name] = build_flow(settings, name)
        sensor_key, reference_key = cluster_key(cluster, "sensor"), cluster_key(cluster, "reference")
        reference = settings.get(reference_key)
        out[cluster] = ClusterFlow(
            built[name],
            sensor_host(sensor_key, settings.get(sensor_key, WAITING)),
            None if reference is None else float(reference),
        )
    return out


# ---- issue 14, items 2 and 3: notifications and admission rules (their checks and readers) -----------------


def _check_user_side(store: Store, key: str, value: Any, declared: Collection[str]) -> None:
    """The notification keys, the admission limits and a cluster's ``users``."""
    if key == SMTP:
        smtp_server({SMTP: value})
    elif key == "notify.sender":
        if not isinstance(value, str) or "@" not in value or any(c.isspace() for c in value):
            raise ConfigError(f"{key}: expected a mail address, got {value!r}")
    elif key in NOTIFY_KEYS:
        notify_number({key: value}, key)
    elif key in ADMISSION_KEYS:
        limit({key: value}, key)
    else:
        users = value if isinstance(value, list) else None
        if not users or not all(isinstance(u, str) and u and not u.isspace() for u in users):
            raise ConfigError(f"{key}: expected a list of user names, got {value!r}")
        _need_cluster(store, key, _CLUSTER_USERS.match(key).group(1), declared)


def smtp_server(settings: Mapping[str, Any]) -> tuple[str, int] | None:
    """The SMTP server as (host, port) from ``notify.smtp`` (``host:port``, or ``host`` for port 25); None when
    not configured."""
    value = settings.get(SMTP)
    if value is None:
        return None
    host, _, port = value.rpartition(":") if isinstance(value, str) and ":" in value else (value, ":", "25")
    if not isinstance(host, str) or not _HOST.fullmatch(host) or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{SMTP}: expected host:port, got {value!r}")
    return host, int(port)


def notify_number(settings: Mapping[str, Any], key: str) -> int | float:
    """``notify.attempts`` (a whole number >= 1) or ``notify.timeout`` (seconds > 0), else its default."""
    value = settings.get(key, NOTIFY_DEFAULTS[key])
    whole = key == "notify.attempts"
    kind = int if whole else int | float
    if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
        raise ConfigError(f"{key}: expected {'a whole number, at least 1' if whole else 'seconds > 0'}, got {value!r}")
    return value


def limit(settings: Mapping[str, Any], key: str) -> int | None:
    """An admission limit (a whole number >= 1), None when not set."""
    value = settings.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{key}: expected a whole number of jobs, at least 1, got {value!r}")
    return value


def cluster_users(settings: Mapping[str, Any], cluster: str) -> list[str] | None:
    """Who may submit campaigns naming ``cluster`` (None: anyone)."""
    return settings.get(cluster_key(cluster, "users"))
