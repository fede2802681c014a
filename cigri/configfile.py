"""The configuration file (YAML) and the environment's overrides, over the state's keys (issue 14, item 2).

Where: ``--config PATH``, else ``$CIGRI_CONFIG``, else ``cigri.yaml`` beside the state file (absent: no file).
What: the keys of ``grid config`` (:mod:`cigri.config`), nested or dotted (``nikita: {queue_timeout: 600}`` and
``nikita.queue_timeout: 600`` are the same key); a mapping is a section unless its path is a key. Under
``clusters.NAME``, ``adapter`` and the adapter's options (those of ``gridclusters add``) declare the cluster:
``grid config check --apply`` creates or updates it in the state (the clusters table stays the truth for
jobs); its other keys (``metasched``, ``flow``, ``users``...) are its configuration.

Precedence, lowest first: default, state (``grid config set``), file, environment. The environment spells a
key ``CIGRI_`` + the key in capitals with ``__`` for each dot (``CIGRI_METASCHED=fairshare``,
``CIGRI_NIKITA__QUEUE_TIMEOUT=600``, ``CIGRI_CLUSTERS__DAHU_2__FLOW=pi`` for the cluster ``Dahu-2``: the one
whose name reads the same lower-cased with ``-`` as ``_``), the
value read as YAML; ``CIGRI_SMTP=host:port`` is ``notify.smtp``. Other ``CIGRI_`` variables without ``__``
(``CIGRI_STATE``, ``CIGRI_CONFIG``, the jobs' own) are not keys; one with ``__`` naming no key is an error.

Every key is checked as ``grid config set`` checks it: an unknown key is a ConfigError naming the file and the
key (or the variable), a bad value names its key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import config
from .adapters import adapter_class, validate_cluster, validate_config
from .clock import Clock
from .errors import ConfigError, NotFound
from .owner import check_config
from .store import Store

FILE_NAME = "cigri.yaml"
ENV_FILE = "CIGRI_CONFIG"
PREFIX = "CIGRI_"
ALIASES = {"CIGRI_SMTP": config.SMTP}
_DECLARATION = re.compile(r"^clusters\.(.+)\.([A-Za-z_][A-Za-z0-9_-]*)$")


@dataclass(frozen=True)
class Layers:
    """The configuration above the state: the file's keys and declared clusters, the environment's keys
    (key -> (value, variable))."""

    path: Path | None = None
    file: Mapping[str, Any] = field(default_factory=dict)
    clusters: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    env: Mapping[str, tuple[Any, str]] = field(default_factory=dict)

    def overrides(self) -> dict[str, Any]:
        return {**self.file, **{key: value for key, (value, _) in self.env.items()}}

    def origins(self) -> dict[str, str]:
        return {**{key: str(self.path) for key in self.file}, **{key: f"${var}" for key, (_, var) in self.env.items()}}


def path_for(state_dir: Path, given: str | os.PathLike | None, environ: Mapping[str, str]) -> tuple[Path, bool]:
    """The file's path and whether it was asked for (``--config`` or ``$CIGRI_CONFIG``: it must exist)."""
    if given is not None:
        return Path(given).expanduser(), True
    if environ.get(ENV_FILE):
        return Path(environ[ENV_FILE]).expanduser(), True
    return state_dir / FILE_NAME, False


def read(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The file's keys and its declared clusters (name -> adapter and options), unchecked values; a
    ConfigError naming the file for bad YAML or an unknown key."""
    import yaml  # here, as in from_env: a command run without a file or cigri's variables never loads PyYAML

    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise NotFound(f"{path}: no such configuration file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}") from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys, got {type(data).__name__}")
    keys: dict[str, Any] = {}
    clusters: dict[str, dict[str, Any]] = {}
    for key, value in _flatten(path, data, ""):
        if config.known(key):
            keys[key] = value
        elif (match := _DECLARATION.match(key)) is not None:
            clusters.setdefault(match.group(1), {})[match.group(2)] = value
        else:
            raise ConfigError(f"{path}: {key}: unknown configuration key (see grid config --help)")
    return keys, clusters


def _flatten(path: Path, data: dict, prefix: str):
    """(dotted key, value) pairs: a mapping is a section unless its path is a key or a cluster's option."""
    for name, value in data.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{path}: {prefix}{name!r}: a key must be a non-empty string")
        key = prefix + name
        if isinstance(value, dict) and not config.known(key) and not _DECLARATION.match(key):
            if not value:
                raise ConfigError(f"{path}: {key}: an empty section")
            yield from _flatten(path, value, key + ".")
        else:
            yield key, value


def from_env(environ: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """The keys the environment sets: key -> (value, variable)."""
    out = {}
    for var, text in sorted(environ.items()):
        if var in ALIASES:
            key = ALIASES[var]
        elif var.startswith(PREFIX) and var != ENV_FILE:
            key = var[len(PREFIX) :].lower().replace("__", ".")
            if not config.known(key):
                if "__" in var:
                    raise ConfigError(f"${var}: {key}: unknown configuration key (see grid config --help)")
                continue  # CIGRI_STATE and the like: not configuration keys
        else:
            continue
        import yaml

        try:
            out[key] = (yaml.safe_load(text), var)
        except yaml.YAMLError:
            raise ConfigError(f"${var}: {text!r} is not a YAML value") from None
    return out


def load(store: Store, path: Path, required: bool, environ: Mapping[str, str], trusted: str | None = None) -> Layers:
    """Read the file (when it exists, or must) and the environment, check every key against the state and
    return the layers (nothing is written). A file another user owns or may write is refused, as the state
    is (:mod:`cigri.owner`; ``trusted``: the owner named on purpose)."""
    check_config(path, trusted)
    keys, clusters = read(path) if required or path.is_file() else ({}, {})
    for name, options in clusters.items():
        _check_declaration(path, name, options)
    env = _env_cluster_names(from_env(environ), [c.name for c in store.clusters()] + list(clusters))
    layers = Layers(path if required or path.is_file() else None, keys, clusters, env)
    settings = {**store.state_settings(), **layers.overrides()}
    origins = layers.origins()
    for key, value in layers.overrides().items():
        try:
            config.check_value(store, settings, key, value, declared=clusters)
        except (ConfigError, NotFound) as exc:  # a key naming a cluster that is nowhere is a configuration error
            raise ConfigError(f"{origins[key]}: {exc}") from None
    return layers


def _env_cluster_names(env: dict[str, tuple[Any, str]], names: list[str]) -> dict[str, tuple[Any, str]]:
    """The environment's ``clusters.NAME.KEY`` with NAME the cluster's own: a variable name is capitals and
    underscores, so it names the cluster whose name reads the same once lower-cased with ``-`` as ``_``."""
    out = {}
    for key, (value, var) in env.items():
        parts = key.split(".", 2)
        if parts[0] == "clusters" and len(parts) == 3:
            same = sorted({name for name in names if name.lower().replace("-", "_") == parts[1]})
            if len(same) > 1:
                raise ConfigError(f"${var}: clusters {' and '.join(same)} read the same: name one in the file")
            if same:
                key = f"clusters.{same[0]}.{parts[2]}"
        out[key] = (value, var)
    return out


def attach(store: Store, layers: Layers) -> None:
    """Make the layers the store's overrides: every reader of ``store.settings()`` sees them."""
    store.overrides = layers.overrides()
    store.origins = layers.origins()


def _check_declaration(path: Path, name: str, options: Mapping[str, Any]) -> None:
    where = f"{path}: clusters.{name}"
    adapter = options.get("adapter")
    if not isinstance(adapter, str):
        option = next(iter(options))
        raise ConfigError(
            f"{path}: clusters.{name}.{option}: unknown configuration key (a cluster declared "
            "here needs its adapter: clusters.NAME.adapter)"
        )
    try:
        adapter_class(adapter)
        validate_cluster(name, adapter, validate_config(adapter, _options(options)))
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _options(options: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in options.items() if key != "adapter"}


def pending(store: Store, layers: Layers) -> list[str]:
    """What ``--apply`` would change in the state's clusters, one line each."""
    lines = []
    for name, options in layers.clusters.items():
        wanted = validate_config(options["adapter"], _options(options))
        if not store.has_cluster(name):
            lines.append(f"cluster {name}: to add ({options['adapter']})")
            continue
        cluster = store.cluster(name)
        if cluster.adapter != options["adapter"]:
            lines.append(f"cluster {name}: adapter {cluster.adapter} in the state, {options['adapter']} in the file")
        elif {**cluster.config, **wanted} != cluster.config:
            lines.append(f"cluster {name}: options to update ({', '.join(sorted(wanted))})")
    return lines


def apply(store: Store, layers: Layers, clock: Clock) -> list[str]:
    """Create the declared clusters missing from the state and update the options of those present, in one
    transaction; what was done. A cluster whose adapter differs is refused (remove it first)."""
    from . import clusters as cluster_ops

    done = []
    with store.transaction():
        for name, options in layers.clusters.items():
            if not store.has_cluster(name):
                cluster_ops.add(store, name, options["adapter"], _options(options), clock)
                done.append(f"cluster {name}: added ({options['adapter']})")
            elif store.cluster(name).adapter != options["adapter"]:
                raise ConfigError(
                    f"{layers.path}: clusters.{name}.adapter: {options['adapter']}, but the state's {name} uses "
                    f"{store.cluster(name).adapter} (gridclusters remove {name} first)"
                )
            elif _options(options):
                before = store.cluster(name).config
                if cluster_ops.set_options(store, name, _options(options)) != before:
                    done.append(f"cluster {name}: updated")
    return done
