"""``classload``: Scoot's load-based class scheduler (twitter/scoot, scheduler/server/load_based_sched_alg.go).

Campaigns fall into *classes*, each entitled to a load percentage of a cluster's slots. Each pass, per
cluster, :func:`allocate` computes how many slots each class may start (its unused entitlement first, then
*loans* of what other classes leave unused) and, when the classes have strayed too far from their
percentages for long enough, how many slots of over-served classes to take back (*rebalancing*). Inside a
class, campaigns share its starts round robin, the campaign with the fewest running jobs first.

:func:`allocate` reproduces Scoot's arithmetic to the unit, float32 rounding included; the seed's worked
examples and Scoot's own test scenarios are its tests. Where Scoot's outcome depends on Go's map iteration
order (classes of equal load, several matching regexes) cigri fixes one order: descending load, then name.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from . import evaluates, inputs

_FLOAT32 = struct.Struct("f")


def _f32(x: float) -> float:
    """``x`` rounded to the nearest 32-bit float, as Go's ``float32(x)`` (one rounding of an exact or
    double-precision value gives the correctly rounded float32 sum, product or quotient of float32s)."""
    return _FLOAT32.unpack(_FLOAT32.pack(x))[0]


@dataclass(frozen=True)
class ClassCounts:
    """One class in one allocation: its configured load percentage, and its slots running and waiting."""

    load_pct: int
    running: int
    waiting: int


@dataclass(frozen=True)
class Rebalance:
    """Scoot's rebalancing settings: off unless both are > 0."""

    threshold: int = 0  # percent: the spread of (target % - running %) across classes that triggers it
    min_duration: float = 0  # seconds the spread must have exceeded the threshold

    @property
    def on(self) -> bool:
        return self.threshold > 0 and self.min_duration > 0


@dataclass(frozen=True)
class Allocation:
    """What :func:`allocate` decided: slots to start and to stop per class (classes with 0 left out)."""

    start: dict[str, int]
    stop: dict[str, int]
    rebalanced: bool
    percents: dict[str, int] = field(default_factory=dict)  # the load percentages, normalised to sum to 100
    targets: dict[str, int] = field(default_factory=dict)  # slots each class is entitled to


def class_order(load_pcts: Mapping[str, float]) -> list[str]:
    """Classes by descending load percentage (ties by name). The first takes every rounding remainder; the
    last is where campaigns that match no class go."""
    return sorted(load_pcts, key=lambda name: (-load_pcts[name], name))


def normalised_percents(load_pcts: Mapping[str, int], order: list[str]) -> dict[str, int]:
    """Scoot's ``normalizePercents``: percentages that do not sum to 100 become floor(p / sum * 100) (a
    float64 division first), and the first class gets 100 minus the others. The sum must be > 0."""
    total = sum(load_pcts.values())
    if total == 100:
        return dict(load_pcts)
    pcts = {name: math.floor(float(load_pcts[name]) / float(total) * 100) for name in order[1:]}
    pcts[order[0]] = 100 - sum(pcts.values())
    return pcts


def targets(workers: int, pcts: Mapping[str, int], order: list[str]) -> dict[str, int]:
    """Slots per class: floor(workers * pct / 100), the first class getting the rest."""
    out = {name: math.floor(float(workers) * float(pcts[name]) / 100.0) for name in order[1:]}
    out[order[0]] = workers - sum(out.values())
    return out


class _Pass:
    """One run of Scoot's ``GetTasksToBeAssigned`` over counts: the fields of its ``jobClass`` per class.
    Jobs of a 0 % class are ignored entirely (they still hold workers, so they lower the idle count)."""

    def __init__(self, workers: int, classes: Mapping[str, ClassCounts]):
        self.workers = workers
        self.order = class_order({name: c.load_pct for name, c in classes.items()})
        self.pct = normalised_percents({name: c.load_pct for name, c in classes.items()}, self.order)
        self.target = targets(workers, self.pct, self.order)
        self.running = {name: c.running if self.pct[name] > 0 else 0 for name, c in classes.items()}
        self.original_waiting = {name: c.waiting if self.pct[name] > 0 else 0 for name, c in classes.items()}
        self.waiting = dict(self.original_waiting)
        self.idle = max(0, workers - sum(c.running for c in classes.values()))
        self.start = dict.fromkeys(self.order, 0)  # negative: slots to stop
        self.share = dict.fromkeys(self.order, 0)  # Scoot's tempNormalizedPct

    def spread(self) -> int:
        """``getCurrentPercentsSpread``: over the classes over their target or with waiting jobs, the
        largest (target % - running %) minus the smallest, both taken with 0. 0 without workers."""
        if len(self.order) < 2 or self.workers <= 0:
            return 0
        low = high = 0
        for name in self.order:
            diff = self.pct[name] - math.floor(float(self.running[name]) * 100.0 / float(self.workers))
            if diff < 0 or self.waiting[name] > 0:
                low, high = min(low, diff), max(high, diff)
        return high - low

    def alloc(self, budget: int) -> tuple[int, bool]:
        """``getTaskAllocations`` (ALLOC): in class order, min(waiting, ceil(budget * share / 100)) in
        float32, never more than ``budget`` in all. Returns (slots allocated, does any class still wait)."""
        total, still_waiting = 0, False
        for name in self.order:
            n = min(self.waiting[name], math.ceil(_f32(_f32(budget) * _f32(_f32(self.share[name]) / 100.0))))
            n = min(n, budget - total)
            self.start[name] += n
            self.waiting[name] -= n
            still_waiting = still_waiting or self.waiting[name] > 0
            total += n
        return total, still_waiting

    def entitlement(self, idle: int) -> tuple[int, bool]:
        """``entitlementTasksToStart``: at most once per class, each waiting class's unused entitlement
        (target - running - started, if not negative) as a percentage of all of them (floor; the first
        class gets 100 minus the others, even with no entitlement of its own), and ALLOC of
        min(idle, total entitlement). Returns (idle left, does any class still wait)."""
        still_waiting = True
        for _ in self.order:
            entitled = {
                name: self.target[name] - (self.running[name] + self.start[name])
                if self.running[name] + self.start[name] <= self.target[name] and self.waiting[name] > 0
                else 0
                for name in self.order
            }
            total = sum(entitled.values())
            if total == 0:
                break
            for name in self.order[1:]:
                self.share[name] = math.floor(float(entitled[name]) * 100.0 / float(total))
            self.share[self.order[0]] = 100 - sum(self.share[name] for name in self.order[1:])
            allocated, still_waiting = self.alloc(min(idle, total))
            idle -= allocated
            if not still_waiting or idle <= 0:
                break
        return idle, still_waiting

    def loan_shares(self, available: int, rebalanced: bool) -> None:
        """``computeLoanPercents``: the load percentages of the waiting classes, normalised, applied to
        L = slots already on loan (running over target; none after a rebalance) + ``available``; each class's
        share of L (floor) minus what it already has on loan (or 0), as a truncated percentage of the sum
        of those (0 for all when the sum is 0: Scoot divides 0 by 0 there)."""
        waiting_pct = sum(self.pct[name] for name in self.order if self.waiting[name] > 0)
        if waiting_pct == 0:
            return
        on_loan = {name: max(0, self.running[name] - self.target[name]) for name in self.order}
        loaners = available + (0 if rebalanced else sum(on_loan.values()))
        wanted = {}
        for name in self.order:
            normalised = float(self.pct[name]) / float(waiting_pct) if self.waiting[name] > 0 else 0.0
            loaned = on_loan[name] + (self.start[name] if rebalanced and self.start[name] < 0 else 0)
            wanted[name] = max(0, math.floor(normalised * float(loaners)) - loaned)
        total = sum(wanted.values())
        for name in self.order:
            self.share[name] = int(float(wanted[name]) / float(total) * 100.0) if total else 0

    def loan(self, idle: int) -> None:
        """``workerLoanAllocation``: at most once per class, loan shares then ALLOC of the idle slots."""
        for _ in self.order:
            self.loan_shares(idle, rebalanced=False)
            allocated, still_waiting = self.alloc(idle)
            idle -= allocated
            if not still_waiting or idle <= 0:
                break

    def rebalance(self) -> None:
        """``rebalanceClassTasks``: every class is brought to its target (a class over it stops the
        difference; one that cannot reach it starts all it waits for), then the slots left over are loaned
        once. The waiting counts are not lowered by those starts before the loan (as in Scoot)."""
        for name in self.order:
            if self.running[name] > self.target[name]:
                self.start[name] = self.target[name] - self.running[name]
            elif self.running[name] + self.waiting[name] < self.target[name]:
                self.start[name] = self.waiting[name]
            else:
                self.start[name] = self.target[name] - self.running[name]
        left = self.workers - sum(self.running[name] + self.start[name] for name in self.order)
        if left > 0:
            self.loan_shares(left, rebalanced=True)
            self.alloc(left)


def percent_spread(workers: int, classes: Mapping[str, ClassCounts]) -> int:
    """How far the classes are from their load percentages: what rebalancing compares with its threshold."""
    return _Pass(workers, classes).spread()


def allocate(
    workers: int,
    classes: Mapping[str, ClassCounts],
    rebalance: Rebalance | None = None,
    exceeded_for: float = 0,
) -> Allocation:
    """Scoot's start and stop counts for one cluster of ``workers`` slots.

    Rebalancing runs instead of the entitlement and loan pass when it is on, the spread exceeds its
    threshold and has done so for longer than its minimum duration (``exceeded_for`` seconds, which the
    caller keeps). Otherwise: entitlement, then loans while slots are idle and jobs wait. A class's starts
    never exceed its waiting count: Scoot may count more after a rebalance's loan, but then runs out of
    tasks to start. ``classes`` must not be empty and their percentages must sum to more than 0.
    """
    run = _Pass(workers, classes)
    rebalanced = bool(
        rebalance and rebalance.on and run.spread() > rebalance.threshold and exceeded_for > rebalance.min_duration
    )
    if rebalanced:
        run.rebalance()
    else:
        idle, still_waiting = run.entitlement(run.idle)
        if idle > 0 and still_waiting:
            run.loan(idle)
    return Allocation(
        start={name: min(n, run.original_waiting[name]) for name, n in run.start.items() if n > 0},
        stop={name: -n for name, n in run.start.items() if n < 0},
        rebalanced=rebalanced,
        percents=run.pct,
        targets=run.target,
    )


def _known(data: Mapping[str, Any], keys: tuple[str, ...], path: str) -> None:
    """Refuse a field the scenario does not define (a misspelt optional field would silently be 0)."""
    for key in data:
        if key not in keys:
            where = f"{path}.{key}" if path else key
            raise ConfigError(f"{where}: unknown field (valid: {', '.join(keys)})")


@evaluates("classload")
def evaluate(scenario: Mapping[str, Any]) -> dict:
    """Scoot's slots to start and to stop per class on one cluster.

    Input:  {"workers": 1000,
             "classes": {"c0": {"load_pct": 30, "running": 200, "waiting": 290}, ...},
             "rebalance": {"threshold": 0, "min_duration_s": 0, "exceeded_for_s": 0}}
    Output: {"start": {"c0": 94, ...}, "stop": {"c1": 2, ...}}

    workers: the cluster's slots; per class: its load percentage (whole numbers, normalised to 100 when
    they do not sum to it; a 0 % class is ignored but its running jobs hold slots), slots running and
    slots waiting. rebalance (optional, off unless threshold and min_duration_s are both > 0): the spread
    in percent that triggers it, how long it must have lasted, and how long it has lasted. Classes with
    nothing to start or stop are left out.
    """
    workers = inputs.integer(scenario, "workers")
    _known(scenario, ("workers", "classes", "rebalance"), "")
    table = inputs.mapping(scenario, "classes")
    if not table:
        raise ConfigError("classes: must name at least one class")
    classes = {}
    for name in table:
        path = f"classes.{name}"
        entry = inputs.mapping(table, name, "classes")
        _known(entry, ("load_pct", "running", "waiting"), path)
        classes[name] = ClassCounts(
            inputs.integer(entry, "load_pct", path),
            inputs.integer(entry, "running", path),
            inputs.integer(entry, "waiting", path),
        )
    if sum(c.load_pct for c in classes.values()) == 0:
        raise ConfigError("classes: the load percentages sum to 0 (at least one must be > 0)")
    settings = inputs.mapping(scenario, "rebalance", default={})
    _known(settings, ("threshold", "min_duration_s", "exceeded_for_s"), "rebalance")
    rebalance = Rebalance(
        inputs.integer(settings, "threshold", "rebalance", 0),
        inputs.number(settings, "min_duration_s", "rebalance", 0),
    )
    result = allocate(workers, classes, rebalance, inputs.number(settings, "exceeded_for_s", "rebalance", 0))
    return {"start": result.start, "stop": result.stop}
