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
schedule never uses a slot the world did not have (:func:`overuse` checks it).

Cost: a few heap operations per job, plus the size of the capacity record, plus what it takes to find where a
job ends earliest. A one-core job is not searched in full on every cluster (:func:`_where`): on most, the lane
that frees first says at once where the job would start there, and the holes are only searched where one may
beat the best end found; the placements are the same as a full search of every cluster would give."""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter


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


_Hole = tuple[float, float, int]  # (from, to, lane)


class _Holes:
    """The holes of one length class in order, in blocks of at most ``2 * _Holes.BLOCK``; each block knows the
    latest end of its holes, and ``_reaches`` the latest end up to each block, so that a search jumps over the
    holes that all end too early for its job (the idle time of every lane before a campaign's arrival, kept
    while older jobs may still use it, is thousands of them)."""

    BLOCK = 32

    def __init__(self, key: int, rank: int) -> None:
        self.rank = rank  # how many classes of the cluster had holes before this one
        self.longest = 2 ** ((key + 1) / 4)  # no hole of the class is as long
        self.blocks: list[list[_Hole]] = []
        self.firsts: list[_Hole] = []  # each block's first hole
        self.highs: list[float] = []  # each block's latest end
        self._reaches: list[float] | None = []  # the latest end up to each block (None: to be counted again)
        self.top = -math.inf  # no hole ends after this

    def add(self, hole: _Hole) -> None:
        self.top = max(self.top, hole[1])
        if not self.blocks:
            self.blocks, self.firsts, self.highs = [[hole]], [hole], [hole[1]]
            self._reaches = None
            return
        b = max(bisect_right(self.firsts, hole) - 1, 0)
        block = self.blocks[b]
        insort(block, hole)
        self.firsts[b] = block[0]
        self.highs[b] = max(self.highs[b], hole[1])
        if len(block) > 2 * self.BLOCK:
            halves = [block[: self.BLOCK], block[self.BLOCK :]]
            self.blocks[b : b + 1] = halves
            self.firsts[b : b + 1] = [half[0] for half in halves]
            self.highs[b : b + 1] = [max(h[1] for h in half) for half in halves]
            self._reaches = None
        elif self._reaches is not None and hole[1] > self._reaches[b]:
            self._reaches = None  # the latest end up to this block and the next ones grew (else none changed)

    def remove(self, hole: _Hole) -> None:
        b = bisect_right(self.firsts, hole) - 1
        block = self.blocks[b]
        del block[bisect_left(block, hole)]
        if not block:
            del self.blocks[b], self.firsts[b], self.highs[b]
            self._reaches = None
            if not self.blocks:
                self.top = -math.inf
            return
        self.firsts[b] = block[0]
        if hole[1] == self.highs[b]:
            self.highs[b] = max(h[1] for h in block)
            if self.highs[b] < hole[1]:
                self._reaches = None  # the latest end up to this block may have shrunk (else none changed)

    def keep(self, after: float, shortest: float) -> list[_Hole]:
        """Forget the holes that end by ``after`` or are shorter than ``shortest``; return them."""
        kept, dropped = [], []
        for block in self.blocks:
            for hole in block:
                (kept if hole[1] > after and hole[1] - hole[0] >= shortest else dropped).append(hole)
        if dropped:
            self.blocks = [kept[i : i + self.BLOCK] for i in range(0, len(kept), self.BLOCK)]
            self.firsts = [block[0] for block in self.blocks]
            self.highs = [max(h[1] for h in block) for block in self.blocks]
            self._reaches = None
            self.top = max(self.highs, default=-math.inf)
        return dropped

    def __iter__(self) -> Iterator[_Hole]:
        return itertools.chain.from_iterable(self.blocks)

    def start(self, low: float, reach: float) -> int:
        """The first block with holes from ``low`` on that may end at ``reach`` or later (``len(blocks)``: none)."""
        first = max(bisect_right(self.firsts, (low,)) - 1, 0)
        if self._reaches is None:
            self._reaches = list(itertools.accumulate(self.highs, max))
        # the blocks before the first that reaches ``reach`` are skipped at once (when that one lies before
        # ``first``, it tells nothing of the blocks from ``first`` on)
        b = max(first, bisect_left(self._reaches, reach))
        while b < len(self.blocks) and self.highs[b] < reach:
            b += 1
        return b

    def after(self, low: float, reach: float, b: int) -> Iterator[_Hole]:
        """The holes from ``low`` on, in order, from block ``b`` (:meth:`start`), less the blocks whose holes all
        end before ``reach``."""
        key = (low,)
        block = self.blocks[b]
        yield from itertools.islice(block, bisect_left(block, key), None)
        for later in range(b + 1, len(self.blocks)):
            if self.highs[later] >= reach:
                yield from self.blocks[later]


class _Cluster:
    """The lanes of a cluster in a heap by when they free (a lane that takes a job gets a new entry; the old
    one, stale, is dropped when it comes up), and the holes: the idle time a lane was left with when a job had
    to start on it later than it freed (after a drop of capacity), which later jobs fill when they fit.

    For :func:`_where` to judge the cluster without searching it: ``peek``, the lane that frees first (kept up
    to date at each change of the lanes), and bounds on the holes (``lowest``: none starts before it;
    ``latest_end``: none ends after it; ``oldest_end`` and ``least``: none ends before, none is shorter; the
    last three are only made exact when holes are forgotten)."""

    def __init__(self, capacity: Capacity, rank: int = 0):
        self.capacity = capacity
        self.name, self.speed, self.delay = capacity.name, capacity.speed, capacity.delay
        self.rank = rank  # its place in the clusters given
        self.lanes = _lanes(capacity.availability)
        self.usable = sum(1 for lane in self.lanes if lane.starts)  # lanes ever up
        self.heap = [(lane.free_at, lane.number) for lane in self.lanes if lane.starts]
        heapq.heapify(self.heap)
        self.holes: dict[int, _Holes] = {}  # length's class -> its holes, classes in the order they came
        self.classes: list[int] = []  # the keys of holes, in order
        self._tops: list[float] | None = []  # no hole of classes[k:] ends after _tops[k] (None: to count again)
        self.by_lane: dict[int, list[tuple[int, _Hole]]] = {}  # lane -> (class, hole) of its holes
        self.lowest = math.inf  # no hole starts before this
        self.oldest_end = math.inf  # no hole ends before this (nor is any shorter than least)
        self.latest_end = -math.inf  # nor after this
        self.least = math.inf
        self.shortest = 0.0  # a hole shorter than this takes no job that is left
        self.peek = self._peek()

    def _top(self) -> tuple[float, int] | None:
        while self.heap and self.heap[0][0] != self.lanes[self.heap[0][1]].free_at:
            heapq.heappop(self.heap)
        return self.heap[0] if self.heap else None

    def _peek(self) -> tuple[float, float, int]:
        """(when the lane that frees first frees, until when it then stays up, that lane); up until -inf when it
        is down then (a search here may then turn some of its time into a hole)."""
        top = self._top()
        if top is None:
            return math.inf, -math.inf, -1
        free_at, number = top
        lane = self.lanes[number]
        i = bisect_right(lane.ends, free_at)
        up = i < len(lane.ends) and lane.starts[i] <= free_at
        return free_at, lane.ends[i] if up else -math.inf, number

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
        """The hole where the job ends first, if it ends by ``bound`` (the first such in the order of the
        classes, then of the holes). Holes are kept by their length's class (a quarter of a power of two:
        :func:`_length_class`; shorter classes than the job's are not looked at), each class by start, from
        those that open the class's longest length before ``earliest`` (earlier ones close before it): once a
        hole would start the job too late to beat the best end found, no later one of its class does better.
        Holes that end before the job could, whole classes of them (``_tops``) or blocks (:class:`_Holes`), are
        stepped over."""
        best_end, best = bound, (math.inf, math.inf, [])
        found = False
        classes = self.classes
        lanes = self.lanes
        reach = earliest + length  # a hole that ends before it holds no job
        if self._tops is None:
            self._tops = list(itertools.accumulate(reversed([self.holes[key].top for key in classes]), max))[::-1]
        tops = self._tops
        for k in range(bisect_left(classes, _length_class(length)), len(classes)):
            if tops[k] < reach:
                break  # none of its holes, nor of any longer class, ends late enough
            holes = self.holes[classes[k]]
            if holes.top < reach:
                continue
            begin = holes.firsts[0][0] if holes.firsts[0][0] > earliest else earliest
            if begin + length > best_end or (found and begin + length == best_end):
                continue  # its first hole starts the job too late already
            b = holes.start(earliest - holes.longest, reach)
            if b == len(holes.blocks):
                continue
            begin = holes.firsts[b][0] if holes.firsts[b][0] > earliest else earliest
            if begin + length > best_end or (found and begin + length == best_end):
                continue  # its first hole that may hold the job starts it too late already
            for low, high, number in holes.after(earliest - holes.longest, reach, b):
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
        self.peek = self._peek()

    def _skip_to_next_interval(self, lane: _Lane) -> None:
        i = bisect_right(lane.ends, lane.free_at)
        self._hole(max(lane.free_at, lane.starts[i]), lane.ends[i], lane.number)
        lane.free_at = lane.starts[i + 1] if i + 1 < len(lane.starts) else math.inf
        heapq.heappush(self.heap, (lane.free_at, lane.number))

    def _fill(self, number: int, start: float, end: float) -> None:
        """Take [start, end) of the lane's hole that holds it (the first such in the order of the classes'
        arrival, then of the holes, should a job of no length touch two): what is left on each side stays a
        hole."""
        holding = [
            (self.holes[key].rank, hole, key)
            for key, hole in self.by_lane.get(number, ())
            if hole[0] <= start and end <= hole[1]
        ]
        if not holding:
            raise AssertionError(f"lane {number}: no hole holds [{start}, {end})")
        _, hole, key = min(holding)
        self.holes[key].remove(hole)
        self.by_lane[number].remove((key, hole))
        if hole[0] == self.lowest:
            self.lowest = self._lowest()
        self._hole(hole[0], start, number)
        self._hole(end, hole[1], number)

    def _hole(self, low: float, high: float, number: int) -> None:
        """Keep [low, high) of the lane as a hole, if some job left may fit in it."""
        if high - low >= self.shortest and high > low:
            key = _length_class(high - low)
            if key not in self.holes:
                self.holes[key] = _Holes(key, len(self.holes))
                insort(self.classes, key)
            if high > self.holes[key].top:
                self._tops = None
            self.holes[key].add((low, high, number))
            self.by_lane.setdefault(number, []).append((key, (low, high, number)))
            self.lowest = min(self.lowest, low)
            self.oldest_end = min(self.oldest_end, high)
            self.latest_end = max(self.latest_end, high)
            self.least = min(self.least, high - low)

    def _lowest(self) -> float:
        """Where the first hole starts (math.inf: no hole)."""
        return min((holes.firsts[0][0] for holes in self.holes.values() if holes.firsts), default=math.inf)

    def forget_holes(self, before: float, shortest: float) -> None:
        """Forget the holes that end before ``before`` (no job left may start so early) or are shorter than
        ``shortest`` (the shortest job left, at speed 1); the holes are only gone through when the bounds on
        them say some may go."""
        self.shortest = shortest / self.capacity.speed
        if self.oldest_end > before and self.least >= self.shortest:
            return  # none to forget
        self._tops = None
        for key, holes in self.holes.items():
            for hole in holes.keep(before, self.shortest):
                self.by_lane[hole[2]].remove((key, hole))
        every = [hole for holes in self.holes.values() for hole in holes]
        self.lowest = min((h[0] for h in every), default=math.inf)
        self.oldest_end = min((h[1] for h in every), default=math.inf)
        self.latest_end = max((h[1] for h in every), default=-math.inf)
        self.least = min((h[1] - h[0] for h in every), default=math.inf)


class _Ranks:
    """The clusters split for :func:`_where`: ``open``, (key, cluster number) by key, of the clusters whose
    first free lane stays up for good (a job's end on the lanes there is that lane's free time, or its arrival
    there, plus its length: nothing to search), the key being that free time or, if sooner, the start of its
    first hole (no job ends there sooner than its key plus its length); ``others``, the numbers of the rest in
    order. A cluster is placed again (:meth:`refresh`) after each change of its lanes or holes."""

    def __init__(self, clusters: list[_Cluster]) -> None:
        self.clusters = clusters
        self.keys: list[float | None] = [None] * len(clusters)  # each cluster's key in open (None: in others)
        self.open: list[tuple[float, int]] = []
        self.others: list[int] = list(range(len(clusters)))
        self.fastest = max((c.speed for c in clusters), default=1.0)
        for i in range(len(clusters)):
            self.refresh(i)

    def refresh(self, i: int) -> None:
        cluster = self.clusters[i]
        free_at, until, _ = cluster.peek
        lowest = cluster.lowest
        key = (lowest if lowest < free_at else free_at) if until == math.inf and free_at < math.inf else None
        old = self.keys[i]
        if key == old:
            return
        if old is None:
            self.others.remove(i)
        else:
            del self.open[bisect_left(self.open, (old, i))]
        if key is None:
            insort(self.others, i)
        else:
            insort(self.open, (key, i))
        self.keys[i] = key


def _length_class(length: float) -> int:
    """A length's class: the quarter of a power of two it lies in (a class's holes differ by less than 19 %)."""
    return math.floor(math.log2(length) * 4) if length > 0 else -(2**62)


def schedule(
    capacities: list[Capacity], jobs: list[Work], in_order: Sequence[float] | None = None
) -> list[Placement] | None:
    """Every job placed, longest arrived job first on the cluster where it ends earliest (None: some job has
    no cluster where it could ever run). ``in_order``: each job's campaign's true mean duration; the arrived
    job of the highest is placed first, and of a campaign's jobs the first given first, as cigri takes them
    (it cannot tell a campaign's jobs apart): the in-order reference."""
    placements: list[Placement] = []
    return None if _schedule(capacities, jobs, placements, in_order) is None else placements


def _schedule(
    capacities: list[Capacity],
    jobs: list[Work],
    placements: list[Placement] | None,
    in_order: Sequence[float] | None = None,
) -> float | None:
    """:func:`schedule`, each placement appended to ``placements`` when given; the latest end (-inf with no
    job; None: some job has no cluster where it could ever run).

    The heaps of arrived jobs hold ranks, not tuples (ints compare faster, and a heap of 100,000 jobs compares
    a lot): a job's rank in ``longest`` is its place among all the jobs by duration, longest first, the first
    arrived first on a tie (as a tie-breaking count of arrivals would order them); in ``shortest`` by duration,
    shortest first, the lowest index first on a tie."""
    clusters = [_Cluster(c, rank) for rank, c in enumerate(capacities)]
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].release)
    durations = [jobs[i].duration for i in order]
    shortest_after = [*list(itertools.accumulate(reversed(durations), min))[::-1], math.inf]
    first = durations if in_order is None else [in_order[i] for i in order]  # a campaign's jobs tie: stable
    longest = sorted(range(len(order)), key=first.__getitem__, reverse=True)  # places in order (stable)
    longest_rank = [0] * len(order)
    for rank, k in enumerate(longest):
        longest_rank[k] = rank
    shortest = sorted(range(len(jobs)), key=lambda i: jobs[i].duration)  # job indexes (stable)
    shortest_rank = [0] * len(jobs)
    for rank, i in enumerate(shortest):
        shortest_rank[i] = rank
    ready: list[int] = []  # ranks in longest: the longest first
    shortest_ready: list[int] = []  # ranks in shortest; placed ones are dropped when they come up
    oldest = 0  # order[oldest] is the first arrived job not placed yet, once placed ones are skipped
    placed = [False] * len(jobs)
    done, latest = 0, -math.inf  # jobs placed, the latest end
    now, next_job = -math.inf, 0
    heappush, heappop = heapq.heappush, heapq.heappop
    choices: dict[frozenset[str], Allowed] = {}  # the clusters each set of names allows
    ranks = _Ranks(clusters)
    while done < len(jobs):
        if not ready:
            now = max(now, jobs[order[next_job]].release)
        now = max(now, min(map(attrgetter("peek"), clusters))[0])
        while next_job < len(order) and jobs[order[next_job]].release <= now:
            heappush(ready, longest_rank[next_job])
            heappush(shortest_ready, shortest_rank[order[next_job]])
            next_job += 1
        if not ready:
            continue
        if done % 256 == 0:  # now and then, the holes no job left can use
            while placed[order[oldest]]:
                oldest += 1
            earliest = jobs[order[oldest]].release
            while shortest_ready and placed[shortest[shortest_ready[0]]]:
                heappop(shortest_ready)
            left = jobs[shortest[shortest_ready[0]]].duration if shortest_ready else math.inf
            least = min(shortest_after[next_job], left)
            for i, cluster in enumerate(clusters):
                cluster.forget_holes(earliest, least)
                ranks.refresh(i)
        index = order[longest[heappop(ready)]]
        (end, start, lanes), cluster = _where(clusters, jobs[index], choices, ranks)
        if cluster is None or math.isinf(end):
            return None
        cluster.take(lanes, start, end)
        ranks.refresh(cluster.rank)
        placed[index] = True
        done += 1
        if end > latest:
            latest = end
        if placements is not None:
            placements.append(_placement(index, cluster.capacity.name, tuple(lanes), start, end))
    return latest


def _placement(job: int, cluster: str, lanes: tuple[int, ...], start: float, end: float) -> Placement:
    """``Placement(job, cluster, lanes, start, end)`` without the generated ``__init__`` (frozen: a setattr
    per field), one per job."""
    placement = object.__new__(Placement)
    placement.__dict__.update(job=job, cluster=cluster, lanes=lanes, start=start, end=end)
    return placement


Allowed = tuple[list[tuple[int, "_Cluster"]], frozenset[int] | None]  # (index, cluster) and their indexes (None: all)


def _where(
    clusters: list[_Cluster],
    job: Work,
    choices: dict[frozenset[str], Allowed] | None = None,
    ranks: _Ranks | None = None,
) -> tuple[tuple[float, float, list[int]], _Cluster | None]:
    """(end, start, lanes) on the cluster where the job ends earliest (the first one on a tie) and that
    cluster, as if :meth:`_Cluster.best` had been asked on each; a one-core job is searched in full only where
    it could beat the best found.

    First the lanes: where the lane that frees first takes the job as soon as it is free (``peek``), that is
    what :meth:`_Cluster.best` would find there without moving any lane, holes aside; elsewhere the search is
    made in full, whatever its outcome, since it may turn a lane's time into a hole, as it would have had every
    cluster been searched. The open clusters of ``ranks`` (a lane up for good) are looked at in the order of
    their keys, and only while one could end the job by the best end found (at the fastest speed, from its
    key). Then the holes, of the clusters that have one that may end the job by the
    best end found: none starts before ``lowest`` nor ends after ``latest_end``."""
    allowed, indexes = _allowed(clusters, job.clusters, {} if choices is None else choices)
    if ranks is None:
        ranks = _Ranks(clusters)
    release, duration = job.release, job.duration
    if job.cores > 1:
        ends = [(c.best(release, duration, job.cores), i) for i, c in allowed]
        for i, _ in allowed:
            ranks.refresh(i)
        best, i = min(ends, key=lambda choice: choice[0][0], default=((math.inf, 0.0, []), -1))
        return best, clusters[i] if i >= 0 else None
    best, chosen = (math.inf, 0.0, []), -1
    unsearched = []  # (cluster's index, earliest start, length, end on its lane) where holes are yet to be seen
    searched = []  # the clusters searched in full: placed again in ranks once the open ones are looked at
    for i in ranks.others:  # in their order: ties go to the first
        if indexes is not None and i not in indexes:
            continue
        cluster = clusters[i]
        free_at, until, number = cluster.peek
        length = duration / cluster.speed
        earliest = release + cluster.delay
        ready = free_at if free_at > earliest else earliest
        end = ready + length
        if ready < until and end <= until and until - free_at >= end - free_at:
            if end < best[0] or chosen < 0:
                best, chosen = (end, ready, [number]), i
            lowest = cluster.lowest
            if (lowest if lowest > earliest else earliest) + length <= end and cluster.latest_end >= earliest + length:
                unsearched.append((i, earliest, length, end))
        else:
            found = cluster.best(release, duration, 1)
            cluster.peek = cluster._peek()
            searched.append(i)
            if found[0] < best[0] or chosen < 0:
                best, chosen = found, i
    soonest = duration / ranks.fastest  # no cluster runs the job in less
    for key, i in ranks.open:  # in the order of their keys, while one may end the job by the best end found
        if key + soonest > best[0]:
            break  # neither its lanes nor its holes end the job by the best end, nor do the next ones
        if indexes is not None and i not in indexes:
            continue
        # the lane's end and the holes' test of the loop above, written out again rather than called: this
        # runs for millions of jobs times the clusters, and a call each costs more than the lines
        cluster = clusters[i]
        free_at, _, number = cluster.peek
        length = duration / cluster.speed
        earliest = release + cluster.delay
        ready = free_at if free_at > earliest else earliest
        end = ready + length
        if end < best[0] or (end == best[0] and i < chosen) or chosen < 0:
            best, chosen = (end, ready, [number]), i
        lowest = cluster.lowest
        if (lowest if lowest > earliest else earliest) + length <= end and cluster.latest_end >= earliest + length:
            unsearched.append((i, earliest, length, end))
    unsearched.sort(key=itemgetter(0))  # the holes in the clusters' order: ties go to the first
    for i in searched:
        ranks.refresh(i)
    for i, earliest, length, end in unsearched:
        bound = min(end, best[0])  # its hole beats the best, or ties it from a cluster before
        if max(earliest, clusters[i].lowest) + length <= bound:
            found = clusters[i]._in_a_hole(earliest, length, bound)
            if found[0] < best[0] or (found[0] == best[0] and i <= chosen):
                best, chosen = found, i
    return best, clusters[chosen] if chosen >= 0 else None


def _allowed(clusters: list[_Cluster], names: frozenset[str], choices: dict[frozenset[str], Allowed]) -> Allowed:
    """(index, cluster) of the clusters a job may use (``names``; empty: any) and their indexes (None: all),
    kept in ``choices`` by ``names`` (the jobs of a campaign share theirs)."""
    allowed = choices.get(names)
    if allowed is None:
        pairs = [(i, c) for i, c in enumerate(clusters) if not names or c.name in names]
        allowed = choices[names] = pairs, (frozenset(i for i, _ in pairs) if names else None)
    return allowed


def works(
    release: float, durations: Iterable[float], cores: int = 1, clusters: frozenset[str] = frozenset()
) -> list[Work]:
    """``Work(release, duration, cores, clusters)`` of each duration, without the generated ``__init__`` (frozen:
    a setattr per field), for the millions of jobs of a big scenario."""
    out = []
    for duration in durations:
        job = object.__new__(Work)
        job.__dict__.update(release=release, duration=duration, cores=cores, clusters=clusters)
        out.append(job)
    return out


def makespan(
    capacities: list[Capacity], jobs: list[Work], start: float, in_order: Sequence[float] | None = None
) -> float | None:
    """The reference's makespan from ``start`` (the first submission), None if it has no schedule; the
    in-order reference's with ``in_order`` (:func:`schedule`)."""
    latest = _schedule(capacities, jobs, None, in_order)  # the placements themselves are not kept
    if latest is None:
        return None
    return (latest if jobs else start) - start


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
