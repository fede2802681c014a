"""Flow control: how many of cigri's jobs may wait in each cluster's queue, pass after pass.

Too few queued jobs leave slots idle between two passes; too many flood the cluster's queue, block its
local users and make nikita kill. A flow strategy reads one cluster at one pass (a :class:`Reading`) and
answers an :class:`Allowance`: the jobs cigri may keep waiting there beyond the free slots, and, for
per-campaign taps, how many jobs each campaign may send this pass. Strategies are pure: a reading and the
strategy's own small JSON-able state (per cluster, persisted by the cycle between passes) in, an allowance
and the next state out; no store, clock or adapter.

``register`` makes a class available by its ``name``; :func:`flow` builds one from its options (a class
with options has a ``configure`` classmethod that checks them and raises ConfigError naming the bad key
as ``flow.<name>.<key>: ...``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ConfigError

State = dict[str, Any]


@dataclass(frozen=True)
class CampaignFlow:
    """One campaign on one cluster at one pass."""

    campaign_id: int
    waiting: int  # its jobs waiting in the cluster's queue
    running: int  # its jobs running there
    sent: int  # its jobs sent there by the previous pass
    slots: int = 1  # slots one of its jobs takes there


@dataclass(frozen=True)
class Reading:
    """What a flow strategy sees of one cluster at one pass. Slots count cores: a parallel job counts
    every slot it takes."""

    cluster: str
    now: float
    period: float  # seconds since the previous reading of this cluster (0 at the first)
    slots: int  # the cluster's slots the grid may use
    free: int  # free slots now
    waiting: int  # slots of cigri's jobs waiting in the RM's queue
    running: int  # slots of cigri's jobs running there
    started: int  # slots of cigri's jobs that started since the previous reading
    expected_ends: float  # slots expected to free during one period: running slots x period / mean duration
    depth: int = 0  # the cluster's ``queue_depth`` option: the constant allowance, a ceiling for the others
    sensor: float | None = None  # the configured sensor's value (None: no reading this pass)
    reference: float | None = None  # the sensor's configured reference
    stalled: bool = False  # cigri's queued jobs do not start there (or the RM says it is under stress)
    campaigns: tuple[CampaignFlow, ...] = ()


@dataclass(frozen=True)
class Allowance:
    """``queue``: the slots of cigri's jobs that may wait in the cluster's queue beyond its free slots (the
    metascheduler queues no more; nikita may take back the waiting excess). ``submit``: when set, the most
    slots cigri sends to the cluster this pass, free slots or not (a controller's actuator). ``campaigns``:
    for taps, the most jobs each named campaign may send this pass (a campaign not named has no cap of its
    own)."""

    queue: int
    submit: int | None = None
    campaigns: Mapping[int, int] = field(default_factory=dict)


class Flow(Protocol):
    name: str

    def allow(self, reading: Reading, state: State) -> tuple[Allowance, State]: ...


class Constant:
    """A constant queue allowance (cigri's behaviour before flow strategies): ``depth`` slots may wait,
    none while cigri's queued jobs do not start there."""

    name = "constant"

    def __init__(self, depth: int | None = None):
        self.depth = depth  # None: the cluster's ``queue_depth`` option (the reading's ``depth``)

    @classmethod
    def configure(cls, options: dict[str, Any]) -> Constant:
        unknown = sorted(set(options) - {"depth"})
        if unknown:
            raise ConfigError(f"flow.{cls.name}.{unknown[0]}: {cls.name} has no such option")
        if "depth" not in options:
            return cls()
        depth = options["depth"]
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
            raise ConfigError(f"flow.{cls.name}.depth: expected a whole number >= 0, got {depth!r}")
        return cls(depth)

    def allow(self, reading: Reading, state: State) -> tuple[Allowance, State]:
        depth = self.depth if self.depth is not None else reading.depth
        return Allowance(0 if reading.stalled else depth), state


_REGISTRY: dict[str, type] = {Constant.name: Constant}


def within_depth(slots: int, depth: int) -> int:
    """``slots``, but never above the cluster's ``queue_depth`` when it is set (> 0): the ceiling of every
    strategy's queue allowance."""
    return min(slots, depth) if depth > 0 else slots


def register(strategy: type) -> type:
    """Make a flow class available by its ``name`` (usable as a class decorator)."""
    _REGISTRY[strategy.name] = strategy
    return strategy


def registry() -> dict[str, type]:
    return dict(_REGISTRY)


def flow(name: str = Constant.name, options: Mapping[str, Any] | None = None) -> Flow:
    """The flow strategy ``name``, built from its options."""
    strategies = registry()
    if name not in strategies:
        raise ConfigError(f"unknown flow strategy {name!r} (valid: {', '.join(sorted(strategies))})")
    cls = strategies[name]
    if hasattr(cls, "configure"):
        return cls.configure(dict(options or {}))
    if options:
        raise ConfigError(f"flow.{name}.{sorted(options)[0]}: {name} has no such option")
    return cls()


# the strategies register themselves when their module is imported
from . import drain, ip, pi, ratio, taps  # noqa: E402, F401
