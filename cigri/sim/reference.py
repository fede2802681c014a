"""The offline reference: a feasible schedule of a simulation's jobs by someone who knew everything cigri
cannot, to judge cigri's makespan against (the lower bound says what no schedule beats; this says what one
schedule reached).

It knows every job's true duration, when each campaign arrived, each cluster's speed and submission delay,
and the capacity the simulated world really had (each cluster's record of the slots left to the grid, less
outages and local users' load). It is list scheduling, longest job first: whenever a slot frees, of the jobs
that have arrived the longest starts, on the cluster (among those its campaign may use) where it ends
earliest, never before its campaign's arrival plus that cluster's delay.

A cluster's capacity is cut into lanes: lane k is up whenever the grid may use more than k of its slots. A
job runs on one lane per core it holds, and only where every one of them stays up for its whole run, so the
schedule never uses a slot the world did not have (:func:`overuse` checks it). Cost: a few heap operations
per job and per cluster, plus the size of the capacity record."""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Capacity:
    """A cluster as the reference sees it: ``availability`` is [(from when, slots the grid could use)], in
    time order; before the first entry no slot, after the last its value stays."""

    name: str
    availability: tuple[tuple[float, int], ...]
    speed: float = 1.0
    delay: float = 0.0


@dataclass(frozen=True)
class Work:
    """One job: ``duration`` at speed 1, on ``cores`` slots of one cluster among ``clusters`` (empty: any)."""

    release: float
    duration: float
    cores: int = 1
    clusters: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Placement:
    job: int  # its index in the jobs given
    cluster: str
    lanes: tuple[int, ...]
    start: float
    end: float


@dataclass
class _Lane:
    """The up intervals of one lane of a cluster, and when the reference's last job on it ends."""

    number: int
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)  # math.inf for the one still open
    free_at: float = -math.inf

    def ends_before(self, at: float, length: float) -> bool:
        """Whether the lane's up interval at ``at`` (or the next one) is shorter than ``length`` from ``at``."""
        i = bisect_right(self.ends, at)
        return i < len(self.ends) and self.ends[i] - max(at, self.starts[i]) < length

    def fit(self, earliest: float, length: float) -> float:
        """The first start at or after ``earliest`` from which the lane stays up ``length`` seconds."""
        i = bisect_right(self.ends, earliest)
        while i < len(self.ends):
            start = max(earliest, self.starts[i])
            if start + length <= self.ends[i]:
                return start
            i += 1
        return math.inf


def _lanes(availability: tuple[tuple[float, int], ...]) -> list[_Lane]:
    """Each lane's up intervals, from the changes of the capacity (each change opens or closes the lanes
    between the old and the new value)."""
    top = max((cores for _, cores in availability), default=0)
    lanes = [_Lane(k) for k in range(top)]
    previous = 0
    for at, cores in availability:
        for lane in lanes[previous:cores]:  # up from now
            if lane.ends and lane.ends[-1] == at:  # down and up again at once: one interval
                lane.ends.pop()
            else:
                lane.starts.append(at)
            lane.ends.append(math.inf)
        for lane in lanes[cores:previous]:  # down from now
            if lane.starts[-1] == at:
                lane.starts.pop()
                lane.ends.pop()
            else:
                lane.ends[-1] = at
        previous = cores
    return lanes


class _Cluster:
    """The lanes of a cluster in a heap by when they free (a lane that takes a job gets a new entry; the old
    one, stale, is dropped when it comes up), and the holes: the idle time a lane was left with when a job had
    to start on it later than it freed (after a drop of capacity), which later jobs fill when they fit."""

    def __init__(self, capacity: Capacity):
        self.capacity = capacity
        self.lanes = _lanes(capacity.availability)
        self.usable = sum(1 for lane in self.lanes if lane.starts)  # lanes ever up
        self.heap = [(lane.free_at, lane.number) for lane in self.lanes if lane.starts]
        heapq.heapify(self.heap)
        self.holes: dict[int, list[tuple[float, float, int]]] = {}  # length's class -> (from, to, lane)
        self.classes: list[int] = []  # the keys of holes, in order
        self.shortest = 0.0  # a hole shorter than this takes no job that is left

    def _top(self) -> tuple[float, int] | None:
        while self.heap and self.heap[0][0] != self.lanes[self.heap[0][1]].free_at:
            heapq.heappop(self.heap)
        return self.heap[0] if self.heap else None

    def best(self, release: float, duration: float, cores: int) -> tuple[float, float, list[int]]:
        """(end, start, lanes) of the earliest end of a job here, and the lanes it would take: on the lane that
        frees first, or in a hole that ends it as soon or sooner."""
        if cores > self.usable:
            return math.inf, math.inf, []
        length = duration / self.capacity.speed
        earliest = release + self.capacity.delay
        if cores > 1:
            return self._together(earliest, length, cores)
        on_a_lane = self._on_a_lane(earliest, length)
        in_a_hole = self._in_a_hole(earliest, length, on_a_lane[0])
        return in_a_hole if in_a_hole[0] <= on_a_lane[0] else on_a_lane

    def _on_a_lane(self, earliest: float, length: float) -> tuple[float, float, list[int]]:
        """The lane, after its last job, where the job ends first (lanes in the heap by when they free)."""
        best = (math.inf, math.inf, [])
        popped = []
        while (top := self._top()) is not None:
            free_at, number = top
            if free_at + length >= best[0]:
                break  # no later lane ends sooner
            lane = self.lanes[number]
            ready = free_at if free_at > earliest else earliest
            # its up time left is too short for the job from when it could start: a hole for shorter or older
            # jobs, and the lane waits for its next up time (once, not at each job while it is down)
            if lane.ends_before(free_at, ready + length - free_at):
                heapq.heappop(self.heap)
                self._skip_to_next_interval(lane)
                continue
            start = lane.fit(ready, length)
            if start + length < best[0]:
                best = (start + length, start, [number])
            if start <= ready:
                break  # this lane starts it as soon as it is free: no later lane does better
            popped.append(heapq.heappop(self.heap))  # set aside while the next lanes are looked at
        for entry in popped:
            heapq.heappush(self.heap, entry)
        return best

    def _in_a_hole(self, earliest: float, length: float, bound: float) -> tuple[float, float, list[int]]:
        """The hole where the job ends first, if it ends by ``bound``. Holes are kept by their length's class
        (a quarter of a power of two: :func:`_length_class`; shorter classes than the job's are not looked
        at), each class by start, from those that open the class's longest length before ``earliest`` (earlier
        ones close before it): once a hole would start the job too late to beat the best end found, no later
        one of its class does better."""
        best_end, best = bound, (math.inf, math.inf, [])
        found = False
        classes = self.classes
        lanes = self.lanes
        for k in range(bisect_left(classes, _length_class(length)), len(classes)):
            key = classes[k]
            holes = self.holes[key]
            for i in range(bisect_left(holes, (earliest - 2 ** ((key + 1) / 4),)), len(holes)):
                low, high, number = holes[i]
                begin = low if low > earliest else earliest
                if begin + length > best_end or (found and begin + length == best_end):
                    break
                if high - begin < length:
                    continue
                start = lanes[number].fit(begin, length)
                end = start + length
                if end <= high and (end < best_end or (not found and end == best_end)):
                    best_end, best, found = end, (end, start, [number]), True
        return best

    def _together(self, earliest: float, length: float, cores: int) -> tuple[float, float, list[int]]:
        """The first start from which ``cores`` lanes are free and stay up together (holes left aside)."""
        lanes = [self.lanes[number] for _, number in self.heap if self.lanes[number].free_at == _]
        start = earliest
        while True:
            fits = sorted((lane.fit(max(start, lane.free_at), length), lane.number) for lane in lanes)
            if len(fits) < cores or math.isinf(fits[cores - 1][0]):
                return math.inf, math.inf, []
            if fits[cores - 1][0] == start:
                return start + length, start, [number for _, number in fits[:cores]]
            start = fits[cores - 1][0]

    def take(self, lanes: list[int], start: float, end: float) -> None:
        for number in lanes:
            lane = self.lanes[number]
            if start < lane.free_at:  # before the lane's last job: in one of its holes (all of them lie before)
                self._fill(number, start, end)
                continue
            self._hole(lane.free_at if not math.isinf(lane.free_at) else lane.starts[0], start, number)
            lane.free_at = end
            heapq.heappush(self.heap, (end, number))

    def _skip_to_next_interval(self, lane: _Lane) -> None:
        i = bisect_right(lane.ends, lane.free_at)
        self._hole(max(lane.free_at, lane.starts[i]), lane.ends[i], lane.number)
        lane.free_at = lane.starts[i + 1] if i + 1 < len(lane.starts) else math.inf
        heapq.heappush(self.heap, (lane.free_at, lane.number))

    def _fill(self, number: int, start: float, end: float) -> None:
        """Take [start, end) of the lane's hole that holds it: what is left on each side stays a hole."""
        for holes in self.holes.values():
            for hole in holes:
                if hole[2] == number and hole[0] <= start and end <= hole[1]:
                    holes.remove(hole)
                    self._hole(hole[0], start, number)
                    self._hole(end, hole[1], number)
                    return
        raise AssertionError(f"lane {number}: no hole holds [{start}, {end})")

    def _hole(self, low: float, high: float, number: int) -> None:
        if high - low >= self.shortest and high > low:
            key = _length_class(high - low)
            if key not in self.holes:
                self.holes[key] = []
                insort(self.classes, key)
            insort(self.holes[key], (low, high, number))

    def forget_holes(self, before: float, shortest: float) -> None:
        """Forget the holes that end before ``before`` (no job left may start so early) or are shorter than
        ``shortest`` (the shortest job left, at speed 1)."""
        self.shortest = shortest / self.capacity.speed
        for holes in self.holes.values():
            holes[:] = [h for h in holes if h[1] > before and h[1] - h[0] >= self.shortest]

    def first_free(self) -> float:
        top = self._top()
        return math.inf if top is None else top[0]


def _length_class(length: float) -> int:
    """A length's class: the quarter of a power of two it lies in (a class's holes differ by less than 19 %)."""
    return math.floor(math.log2(length) * 4) if length > 0 else -(2**62)


def schedule(capacities: list[Capacity], jobs: list[Work]) -> list[Placement] | None:
    """Every job placed, longest arrived job first on the cluster where it ends earliest (None: some job has
    no cluster where it could ever run)."""
    clusters = {c.name: _Cluster(c) for c in capacities}
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].release)
    durations = [jobs[i].duration for i in order]
    shortest_after = [*list(itertools.accumulate(reversed(durations), min))[::-1], math.inf]
    ready: list[tuple[float, int, int]] = []  # (-duration, tie, job): the longest first
    # the shortest ready job and the one that arrived first (placed ones are dropped when they come up)
    shortest_ready: list[tuple[float, int]] = []
    oldest_ready: list[tuple[float, int]] = []
    placed = [False] * len(jobs)
    tie = itertools.count()
    placements: list[Placement] = []
    now, next_job = -math.inf, 0
    while len(placements) < len(jobs):
        if not ready:
            now = max(now, jobs[order[next_job]].release)
        now = max(now, min(c.first_free() for c in clusters.values()))
        while next_job < len(order) and jobs[order[next_job]].release <= now:
            index = order[next_job]
            heapq.heappush(ready, (-jobs[index].duration, next(tie), index))
            heapq.heappush(shortest_ready, (jobs[index].duration, index))
            heapq.heappush(oldest_ready, (jobs[index].release, index))
            next_job += 1
        if not ready:
            continue
        if len(placements) % 256 == 0:  # now and then, the holes no job left can use
            earliest = _first_left(oldest_ready, placed)
            shortest = min(shortest_after[next_job], _first_left(shortest_ready, placed))
            for cluster in clusters.values():
                cluster.forget_holes(earliest, shortest)
        _, _, index = heapq.heappop(ready)
        job = jobs[index]
        allowed = [c for name, c in clusters.items() if not job.clusters or name in job.clusters]
        choices = [(c.best(job.release, job.duration, job.cores), c) for c in allowed]
        (end, start, lanes), cluster = min(choices, key=lambda item: item[0][0], default=((math.inf, 0, []), None))
        if cluster is None or math.isinf(end):
            return None
        cluster.take(lanes, start, end)
        placed[index] = True
        placements.append(Placement(index, cluster.capacity.name, tuple(lanes), start, end))
    return placements


def _first_left(heap: list[tuple[float, int]], placed: list[bool]) -> float:
    while heap and placed[heap[0][1]]:
        heapq.heappop(heap)
    return heap[0][0] if heap else math.inf


def makespan(capacities: list[Capacity], jobs: list[Work], start: float) -> float | None:
    """The reference's makespan from ``start`` (the first submission), None if it has no schedule."""
    placements = schedule(capacities, jobs)
    if placements is None:
        return None
    return max((p.end for p in placements), default=start) - start


def overuse(capacities: list[Capacity], jobs: list[Work], placements: list[Placement]) -> list[str]:
    """What a schedule does that the world did not allow: a job started before its arrival plus the cluster's
    delay, run shorter than its duration at the cluster's speed, on a cluster its campaign may not use, or more
    slots busy than the grid had at some moment. Empty for a feasible schedule."""
    problems = []
    by_name = {c.name: c for c in capacities}
    events: dict[str, list[tuple[float, int]]] = {c.name: [] for c in capacities}
    for p in placements:
        job, capacity = jobs[p.job], by_name[p.cluster]
        if job.clusters and p.cluster not in job.clusters:
            problems.append(f"job {p.job} on {p.cluster}, which its campaign may not use")
        if p.start < job.release + capacity.delay - 1e-9:
            problems.append(f"job {p.job} starts at {p.start} before {job.release + capacity.delay}")
        if p.end - p.start < job.duration / capacity.speed - 1e-6:
            problems.append(f"job {p.job} runs {p.end - p.start} s, less than its duration")
        events[p.cluster] += [(p.start, job.cores), (p.end, -job.cores)]
    for name, changes in events.items():
        availability = by_name[name].availability
        times = [t for t, _ in availability]
        used = 0
        for at, step in sorted(changes, key=lambda e: (e[0], e[1])):  # ends before starts at the same moment
            used += step
            i = bisect_right(times, at) - 1
            slots = availability[i][1] if i >= 0 else 0
            if step > 0 and used > slots:
                problems.append(f"{name}: {used} slots busy at {at}, {slots} available")
        # a drop of capacity under jobs already running
        for at, slots in availability:
            running = sum(jobs[p.job].cores for p in placements if p.cluster == name and p.start <= at < p.end)
            if running > slots:
                problems.append(f"{name}: {running} slots busy at {at}, {slots} available")
    return problems
