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

import heapq
import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from . import (
    CampaignView,
    ClusterView,
    Decision,
    GridJob,
    Snapshot,
    State,
    Stop,
    evaluates,
    inputs,
    launches,
    register,
)

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


@dataclass(frozen=True)
class ClassSpec:
    """A configured class: its load percentage and the regex that claims campaigns (None: it claims none,
    but still takes the campaigns no regex claims when it is the smallest class)."""

    load_pct: int
    match: re.Pattern[str] | None = None


_OPTIONS = ("classes", "rebalance_threshold", "rebalance_min_duration")


@register
class ClassLoad:
    """Scoot's load-based classes over a grid: per cluster and pass, :func:`allocate` on the cluster's slots.

    - A campaign's class: the first class (in :func:`class_order`) whose ``match`` regex is found anywhere
      in the campaign's JDL ``class`` key, or in its user when that key is absent; no match: the smallest
      class (Scoot's rule for unknown requestors).
    - Workers: the slots of the cluster's grid jobs (of the campaigns this strategy sees: test campaigns'
      jobs are left out, like local users' load) plus its free slots. A queued grid job counts as running
      for its class: the cycle's ``free`` already excludes the slots promised to it, so it holds a worker
      as surely as a running job; not counting it would let a class queue jobs past its share unseen.
    - Waiting per class: the slots its campaigns may still send there (waiting jobs within each campaign's
      limit for the cluster, minus what earlier clusters took this pass).
    - Starts go to the class's campaigns round robin, the campaign with the fewest jobs on the grid first,
      one job a turn (Scoot's task selection); a campaign then waits for its next turn behind those with
      as many jobs. Counts are slots: a campaign's turn is skipped when the slots left are fewer than its
      job needs.
    - Stops (rebalancing only): the over-served class's newest jobs on the cluster, queued ones first
      (newest submitted first: nothing lost), then running ones by start time, newest first; a job larger
      than what is left to stop is passed over. Scoot looks back at most 4 hours for tasks to stop; cigri
      looks at every job.
    - After the free slots, the queue allowance: :func:`allocate` again with the allowance added to the
      workers (no rebalancing), so queued jobs follow the same percentages instead of one campaign's order.
    - The rebalance timer: the state keeps, per cluster, since when the spread has exceeded the threshold;
      it is cleared by a rebalance and when the spread falls back (Scoot's code keeps the first mark until
      a rebalance, which rebalances at once on a later excursion: its README's "over a threshold for a set
      period of time" is what is kept here).
    """

    name = "classload"

    def __init__(self, classes: Mapping[str, ClassSpec] | None = None, rebalance: Rebalance | None = None):
        self.classes = dict(classes or {"default": ClassSpec(100)})
        self.rebalance = rebalance or Rebalance()
        self.order = class_order({name: spec.load_pct for name, spec in self.classes.items()})

    @classmethod
    def configure(cls, options: dict) -> ClassLoad:
        """Build from ``metasched.classload.*``: ``classes`` ({NAME: {load_pct: P, match: REGEX}}, default
        one class of 100 % taking every campaign), ``rebalance_threshold`` (percent, 0 = off) and
        ``rebalance_min_duration`` (seconds)."""
        where = "metasched.classload"
        for key in options:
            if key not in _OPTIONS:
                raise ConfigError(f"{where}.{key}: no such option (valid: {', '.join(_OPTIONS)})")
        classes = None
        if "classes" in options:
            table = inputs.mapping(options, "classes", where)
            if not table:
                raise ConfigError(f"{where}.classes: must name at least one class")
            classes = {name: _class_spec(table, name, f"{where}.classes") for name in table}
            if sum(spec.load_pct for spec in classes.values()) == 0:
                raise ConfigError(f"{where}.classes: the load percentages sum to 0 (at least one must be > 0)")
        rebalance = Rebalance(
            inputs.integer(options, "rebalance_threshold", where, 0),
            inputs.number(options, "rebalance_min_duration", where, 0),
        )
        return cls(classes, rebalance)

    def classify(self, campaign: CampaignView) -> str:
        requestor = campaign.klass or campaign.user
        for name in self.order:
            pattern = self.classes[name].match
            if pattern is not None and pattern.search(requestor):
                return name
        return self.order[-1]

    def decide(self, snapshot: Snapshot, state: State) -> Decision:
        placement = _Placement(self, snapshot)
        since = dict(state.get("exceeded_since", {}))
        stops: list[Stop] = []
        timers: dict[str, float] = {}
        for cluster in snapshot.clusters:
            stops += placement.cluster(cluster, since.get(cluster.name), timers)
        return Decision(
            launches=launches(placement.taken),
            stops=tuple(stops),
            state={"exceeded_since": timers} if timers else {},
        )


def _class_spec(table: Mapping[str, Any], name: str, path: str) -> ClassSpec:
    entry = inputs.mapping(table, name, path)
    _known(entry, ("load_pct", "match"), f"{path}.{name}")
    match = inputs.text(entry, "match", f"{path}.{name}") if "match" in entry else None
    try:
        pattern = None if match is None else re.compile(match)
    except re.error as exc:
        raise ConfigError(f"{path}.{name}.match: not a regular expression: {exc}") from exc
    return ClassSpec(inputs.integer(entry, "load_pct", f"{path}.{name}"), pattern)


class _Placement:
    """One pass of :class:`ClassLoad` over the clusters in order: what each campaign has left to send and
    has on the grid, and the jobs given so far per (cluster, campaign)."""

    def __init__(self, strategy: ClassLoad, snapshot: Snapshot):
        self.strategy = strategy
        self.now = snapshot.now
        self.klass = {c.id: strategy.classify(c) for c in snapshot.campaigns}
        self.members: dict[str, list[CampaignView]] = {name: [] for name in strategy.order}
        for c in sorted(snapshot.campaigns, key=lambda c: (c.submitted_at, c.id)):
            self.members[self.klass[c.id]].append(c)
        self.left = {c.id: c.waiting for c in snapshot.campaigns}
        self.on_grid = {c.id: c.active for c in snapshot.campaigns}
        self.taken: dict[tuple[str, int], int] = {}

    def sendable(self, cluster: str, campaign: CampaignView) -> int:
        """Jobs the campaign may still send to the cluster this pass."""
        demand = campaign.demands.get(cluster)
        if demand is None:
            return 0
        return max(0, min(self.left[campaign.id], demand.limit - self.taken.get((cluster, campaign.id), 0)))

    def counts(self, cluster: str, running: Mapping[str, int], cap: int) -> dict[str, ClassCounts]:
        """Each class's load percentage, slots running and slots its campaigns may still send there, the
        latter counted up to ``cap`` only: :func:`allocate` never starts more than the workers it is given,
        so any waiting count above them decides the same."""
        return {
            name: ClassCounts(self.strategy.classes[name].load_pct, running[name], self.waiting(cluster, members, cap))
            for name, members in self.members.items()
        }

    def waiting(self, cluster: str, members: Sequence[CampaignView], cap: int) -> int:
        total = 0
        for campaign in members:
            if cluster in campaign.demands:
                total += self.sendable(cluster, campaign) * campaign.demands[cluster].slots_per_job
                if total >= cap:
                    return cap
        return total

    def cluster(self, cluster: ClusterView, since: float | None, timers: dict[str, float]) -> list[Stop]:
        """Decide one cluster: Scoot on its workers (stops, then starts in the free and freed slots), then
        the queue allowance. Records the cluster's rebalance timer in ``timers``; returns the stops."""
        rebalance = self.strategy.rebalance
        mine = [job for job in cluster.jobs if job.campaign_id in self.klass]
        running = dict.fromkeys(self.strategy.order, 0)
        for job in mine:
            running[self.klass[job.campaign_id]] += job.slots
        workers = cluster.free + sum(running.values())
        counts = self.counts(cluster.name, running, workers + 1)
        exceeded = rebalance.on and percent_spread(workers, counts) > rebalance.threshold
        since = (self.now if since is None else since) if exceeded else None
        result = allocate(workers, counts, rebalance, self.now - since if since is not None else 0.0)
        if since is not None and not result.rebalanced:
            timers[cluster.name] = since
        stopped = [job for name, slots in result.stop.items() for job in _newest(mine, self.klass, name, slots)]
        for job in stopped:
            running[self.klass[job.campaign_id]] -= job.slots
        budget = cluster.free + sum(job.slots for job in stopped)
        budget -= self.start(cluster.name, result.start, budget, running)
        if budget + cluster.queue > 0:
            extra = allocate(workers + cluster.queue, self.counts(cluster.name, running, workers + cluster.queue + 1))
            self.start(cluster.name, extra.start, budget + cluster.queue, running)
        return [
            Stop(cluster.name, job.job_id, f"classload: class {self.klass[job.campaign_id]} over its share")
            for job in stopped
        ]

    def start(self, cluster: str, starts: Mapping[str, int], budget: int, running: dict[str, int]) -> int:
        """Give each class its start slots (in class order, within ``budget``); returns the slots used and
        adds them to ``running``."""
        used = 0
        for name in self.strategy.order:
            given = self.spread(cluster, name, min(starts.get(name, 0), budget - used))
            running[name] += given
            used += given
        return used

    def spread(self, cluster: str, name: str, slots: int) -> int:
        """Scoot's task selection: one job a turn to the class's campaign with the fewest jobs on the grid
        (ties: the older), which then queues behind the campaigns with as many. Returns the slots used."""
        if slots <= 0:
            return 0
        counts, left = self.on_grid, self.left
        turns = [(counts[c.id], seq, c) for seq, c in enumerate(self.members[name]) if left[c.id] > 0]
        heapq.heapify(turns)
        seq, used = len(self.members[name]), 0
        while turns and used < slots:
            on_grid, _, campaign = heapq.heappop(turns)
            if self.sendable(cluster, campaign) <= 0:
                continue
            size = campaign.demands[cluster].slots_per_job
            if size > slots - used:
                continue
            key = (cluster, campaign.id)
            self.taken[key] = self.taken.get(key, 0) + 1
            self.left[campaign.id] -= 1
            self.on_grid[campaign.id] += 1
            used += size
            heapq.heappush(turns, (on_grid + 1, seq, campaign))
            seq += 1
        return used


def _newest(jobs: Sequence[GridJob], klass: Mapping[int, str], name: str, slots: int) -> list[GridJob]:
    """The class's jobs to stop for ``slots``: queued ones newest submitted first, then running ones newest
    started first, passing over a job larger than what is left to stop."""
    own = [job for job in jobs if klass[job.campaign_id] == name]
    queued = sorted((j for j in own if not j.running), key=lambda j: (j.submitted_at, j.job_id), reverse=True)
    started = sorted((j for j in own if j.running), key=lambda j: (j.started_at, j.job_id), reverse=True)
    chosen = []
    for job in queued + started:
        if job.slots <= slots:
            chosen.append(job)
            slots -= job.slots
    return chosen
