"""Cluster management: the embedded ``local`` default, add/remove/set, and usage for gridclusters."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .adapters import AdapterContext, adapter_class, adapter_for, validate_config
from .clock import Clock
from .errors import AdapterError, CigriError, ConfigError
from .model import Capacity
from .store import Store

DEFAULT_CLUSTER = "local"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def ensure_default(store: Store, clock: Clock) -> None:
    """A new state file gets the ``local`` cluster: real processes on this machine, no setup."""
    if not store.clusters():
        with store.transaction():
            if not store.clusters():
                store.add_cluster(DEFAULT_CLUSTER, "local", {}, clock.now())


def add(store: Store, name: str, adapter: str, options: dict, clock: Clock) -> None:
    if not _NAME.match(name):
        raise ConfigError(f"cluster name {name!r}: letters, digits, '.', '_' and '-' only")
    adapter_class(adapter)
    config = validate_config(adapter, options)
    if store.has_cluster(name):
        raise ConfigError(f"cluster {name!r} exists already (change it with gridclusters set)")
    with store.transaction():
        store.add_cluster(name, adapter, config, clock.now())


def set_options(store: Store, name: str, options: dict) -> dict:
    cluster = store.cluster(name)
    config = {**cluster.config, **validate_config(cluster.adapter, options)}
    with store.transaction():
        store.set_cluster_config(name, config)
    return config


def remove(store: Store, name: str) -> None:
    store.cluster(name)
    if store.cluster_in_use(name):
        raise CigriError(f"cluster {name!r} is used by a campaign that is not over; cancel or finish it first")
    with store.transaction():
        store.remove_cluster(name)


@dataclass(frozen=True)
class ClusterUsage:
    name: str
    adapter: str
    reachable: bool
    capacity: Capacity | None
    best_effort: bool
    problem: str


def usage(store: Store, clock: Clock) -> list[ClusterUsage]:
    out = []
    for cluster in store.clusters():
        event = store.open_cluster_event(cluster.name)
        capacity, problem = None, ""
        adapter = adapter_for(cluster, AdapterContext(store.directory, clock))
        try:
            capacity = adapter.capacity()
        except AdapterError as exc:
            problem = str(exc)
        finally:
            adapter.close()
        if event and not problem:
            problem = f"event {event.id} open: {event.message}"
        out.append(
            ClusterUsage(cluster.name, cluster.adapter, capacity is not None, capacity, adapter.best_effort, problem)
        )
    return out
