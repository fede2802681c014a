"""The state's configuration (``grid config``): which metascheduler strategy decides, with which options.

Keys, each checked when set (an unknown key or a value the strategy refuses is a ConfigError naming it,
and nothing is written):

- ``metasched``: the strategy of every cluster without its own (default ``fifo``);
- ``metasched.NAME.OPTION``: an option of strategy NAME, checked by building NAME with it
  (``metasched.fairshare.half_life`` is also the half-life of users' decayed usage in the snapshot);
- ``clusters.CLUSTER.metasched``: a cluster's own strategy. Such clusters are decided by it, after the
  others, on a snapshot restricted to them;
- ``spritz``: the predictor of campaigns' ends (default ``window``, see :mod:`cigri.prediction`);
  ``spritz.window``: the seconds of terminations its throughput is measured over (default 3600).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, NotFound
from .prediction import WINDOW, Predictor, predictor
from .scheduling import MetaScheduler, metascheduler, registry
from .store import Store

DEFAULT_STRATEGY = "fifo"
DEFAULT_HALF_LIFE = 604800.0  # seconds: a week, Slurm's PriorityDecayHalfLife default
HALF_LIFE_KEY = "metasched.fairshare.half_life"
_OPTION = re.compile(r"^metasched\.([^.]+)\.(.+)$")
_CLUSTER = re.compile(r"^clusters\.(.+)\.metasched$")
KEYS = "metasched, metasched.NAME.OPTION, clusters.CLUSTER.metasched, spritz, spritz.window"
SPRITZ_KEYS = ("spritz", "spritz.window")


def cluster_key(cluster: str) -> str:
    return f"clusters.{cluster}.metasched"


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
    return key in ("metasched", *SPRITZ_KEYS) or bool(_OPTION.match(key) or _CLUSTER.match(key))


def _refuse_unknown(key: str) -> None:
    if not _known(key):
        raise ConfigError(f"{key}: unknown configuration key (valid: {KEYS})")


def set_value(store: Store, key: str, value: Any) -> None:
    """Set ``key`` once the configuration it makes is checked: the strategy it names (or whose option it
    is) must build with its options; a cluster's strategy needs the cluster."""
    _refuse_unknown(key)
    settings = {**store.settings(), key: value}
    if key in SPRITZ_KEYS:
        forecaster(settings)
    elif (match := _OPTION.match(key)) is not None:
        build(settings, match.group(1))
    else:
        if not isinstance(value, str):
            raise ConfigError(f"{key}: expected a strategy name, got {value!r}")
        if (match := _CLUSTER.match(key)) is not None and not store.has_cluster(match.group(1)):
            raise NotFound(f"{key}: no cluster named {match.group(1)!r}")
        build(settings, value)
    with store.transaction():
        store.set_setting(key, value)


def unset_value(store: Store, key: str) -> bool:
    """Remove ``key`` (a known one); whether it was set. A registered strategy that needs the option
    refuses its removal."""
    _refuse_unknown(key)
    settings = store.settings()
    settings.pop(key, None)
    if (match := _OPTION.match(key)) is not None and match.group(1) in registry():
        build(settings, match.group(1))
    with store.transaction():
        return store.unset_setting(key)


def half_life(settings: Mapping[str, Any]) -> float:
    """The half-life of users' decayed usage, in seconds."""
    return float(settings.get(HALF_LIFE_KEY, DEFAULT_HALF_LIFE))


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
