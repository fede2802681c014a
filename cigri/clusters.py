"""Cluster management: the embedded ``local`` default, add/remove/set, and usage for gridclusters."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from .adapters import AdapterContext, adapter_class, adapter_for, validate_cluster, validate_config
from .calls import Bounded
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
    validate_cluster(name, adapter, config)
    if store.has_cluster(name):
        raise ConfigError(f"cluster {name!r} exists already (change it with gridclusters set)")
    with store.transaction():
        store.add_cluster(name, adapter, config, clock.now())


def set_options(store: Store, name: str, options: dict) -> dict:
    cluster = store.cluster(name)
    config = {**cluster.config, **validate_config(cluster.adapter, options)}
    validate_cluster(name, cluster.adapter, config)
    with store.transaction():
        store.set_cluster_config(name, config)
    return config


def remove(store: Store, name: str, clock: Clock) -> None:
    store.cluster(name)
    if store.cluster_in_use(name):
        raise CigriError(f"cluster {name!r} is used by a campaign that is not over; cancel or finish it first")
    with store.transaction():
        store.remove_cluster(name, clock.now())


@dataclass(frozen=True)
class ClusterUsage:
    name: str
    adapter: str
    reachable: bool
    capacity: Capacity | None
    best_effort: bool
    problem: str
    blacklisted: bool = False  # by the admin: no new jobs go there

    @property
    def state(self) -> str:
        """What every gridclusters view that asks the cluster calls its state: BLACKLISTED (by the admin),
        PROBLEM (it did not answer now, or an open cluster event says it did not lately) or ok."""
        if self.blacklisted:
            return "BLACKLISTED"
        return "ok" if self.reachable and not self.problem else "PROBLEM"


def usage(store: Store, clock: Clock, names: Collection[str] | None = None) -> list[ClusterUsage]:
    """Each cluster's capacity (of those ``names`` only, if given), asked of all concurrently and bounded as
    the almighty's calls are."""
    context = AdapterContext(store.directory, clock)
    asked = []
    for cluster in store.clusters():
        if names is not None and cluster.name not in names:
            continue
        adapter = Bounded(cluster.name, lambda _, cluster=cluster: adapter_for(cluster, context))
        try:
            asked.append((cluster, adapter, adapter.start("capacity")))
        except AdapterError as exc:
            asked.append((cluster, adapter, exc))
    out = []
    for cluster, adapter, call in asked:
        capacity, problem = None, ""
        try:
            if isinstance(call, AdapterError):
                raise call
            capacity = call.result()
        except AdapterError as exc:
            problem = str(exc)
        best_effort = not isinstance(call, AdapterError) and adapter.best_effort  # built, unless it cannot be
        adapter.close()
        event = store.open_cluster_event(cluster.name)
        if event and not problem:
            problem = f"event {event.id} open: {event.message}"
        blacklisted = store.blacklist(None, cluster.name) is not None
        reachable = capacity is not None
        out.append(ClusterUsage(cluster.name, cluster.adapter, reachable, capacity, best_effort, problem, blacklisted))
    return out
