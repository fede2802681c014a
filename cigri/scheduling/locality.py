"""Job pickers: *which* of a campaign's waiting jobs go to each cluster, once a metascheduler strategy decided
*how many* (its :class:`~cigri.scheduling.Assignment`\\ s).

A picker sees one campaign at a time through a small frozen :class:`Holdings` (its waiting jobs in increasing
id order with the files each reads, the files each cluster holds or is staging, each cluster's speed, the jobs
a cluster must not get) and the number of jobs each cluster takes this pass; it returns the job ids per
cluster and its next state for the campaign (JSON). Pickers are pure, chosen by name from :func:`pickers`
(configuration key ``locality``, default ``cursors``: see :mod:`cigri.config`):

- ``in-order``: the lowest ids first, cluster after cluster (what the cycle did before pickers);
- ``locality``: BOINC's locality scheduling (``sched/sched_locality.cpp``), see :class:`Locality`;
- ``cursors``: the never-built redesign of BOINC's locality scheduling, see :mod:`cigri.scheduling.cursors`.

Every picker gives a job to one cluster at most in a pass and never to a cluster that must not get it
(``Holdings.exclude``: a cluster where a copy of the job runs, e.g. its finalize replica), so that two
copies of a job never share a cluster.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ConfigError
from . import evaluates
from . import inputs as read

PickerState = Mapping[str, Any]  # a picker's state for one campaign: JSON-able


@dataclass(frozen=True)
class Waiting:
    """A waiting job and the input files it reads (file keys, exact names)."""

    job_id: int
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Holdings:
    """What a picker sees of one campaign in a pass."""

    jobs: tuple[Waiting, ...]  # its waiting jobs that may go anywhere, increasing id
    held: Mapping[str, frozenset[str]] = field(default_factory=dict)  # cluster -> files held or being staged
    speeds: Mapping[str, float] = field(default_factory=dict)  # cluster -> jobs it completes per second
    exclude: Mapping[str, frozenset[int]] = field(default_factory=dict)  # cluster -> job ids it must not get
    sizes: Mapping[str, int] = field(default_factory=dict)  # file -> bytes (a file not listed weighs 1)

    def allowed(self, cluster: str, job_id: int) -> bool:
        return job_id not in self.exclude.get(cluster, frozenset())

    def size(self, file: str) -> int:
        return self.sizes.get(file, 1)


Picks = dict[str, list[int]]


class JobPicker(Protocol):
    name: str

    def pick(self, holdings: Holdings, wanted: Mapping[str, int], state: PickerState) -> tuple[Picks, PickerState]:
        """Job ids per cluster, at most ``wanted[cluster]`` each, and the campaign's next state."""
        ...


class InOrder:
    """The lowest waiting ids first, to each cluster in the order of ``wanted``."""

    name = "in-order"

    def pick(self, holdings: Holdings, wanted: Mapping[str, int], state: PickerState) -> tuple[Picks, PickerState]:
        taken: set[int] = set()
        picks: Picks = {}
        for cluster, n in wanted.items():
            picks[cluster] = take(holdings, cluster, (job.job_id for job in holdings.jobs), n, taken)
        return picks, {}


def take(holdings: Holdings, cluster: str, candidates: Iterable[int], n: int, taken: set[int]) -> list[int]:
    """Up to ``n`` of ``candidates`` (in their order) not taken yet and allowed on the cluster; marks them."""
    chosen = []
    for job_id in candidates:
        if len(chosen) >= n:
            break
        if job_id not in taken and holdings.allowed(cluster, job_id):
            chosen.append(job_id)
            taken.add(job_id)
    return chosen


class Locality:
    """BOINC's locality scheduling (``sched/sched_locality.cpp``), for the clusters of one campaign in one pass,
    generalised to jobs reading several files:

    1. each cluster first takes the jobs needing the fewest bytes it does not hold yet (files in its cache or
       being staged there), lowest id first on ties, among the jobs sharing a file with it (jobs without input
       files need none, anywhere); the files of each job it takes count as held from then on, so with one-file
       jobs it takes the jobs of the files it holds in increasing id order (BOINC's rule), and with jobs
       reading a contiguous range of a file sequence it goes on along the sequence, one new file per job.
       (Without sizes in the view, files count alike.)
    2. a cluster that still wants jobs and shares no file with any job left starts afresh where it is far from
       every other cluster's files: in the longest run of consecutive files (in the order of their lowest
       waiting job) that no cluster holds, at its first file, or at its middle when a job links the run to a
       held file next to it (the cluster holding that file can go on into the run one file at a time, so the
       newcomer leaves it half). It takes the lowest job reading that file, then goes on as in step 1 (lowest
       id first: from a run's middle it goes down the sequence until it meets the cluster below, then up). When
       every file with jobs left has a holder, it takes the first file held by the fewest clusters. (BOINC
       draws the file at random within a working set of about N/M files, N hosts and M replicas of each job;
       counting holders is the same spread, deterministic, and no cluster flocks onto another's frontier.)

    Clusters take turns in the order of ``wanted``: step 1 for each, then one fresh start each (and step 1
    from there) while some still want jobs. Cost per pass: linear in the waiting jobs' files (the jobs reading
    the files each cluster holds are counted once; the runs of files nobody holds are kept in a heap, split as
    files get holders), with a scan of the files only for a fresh start when every file has a holder."""

    name = "locality"

    def pick(self, holdings: Holdings, wanted: Mapping[str, int], state: PickerState) -> tuple[Picks, PickerState]:
        work = _Pass(holdings)
        need = {cluster: n for cluster, n in wanted.items() if n > 0}
        picks: Picks = {cluster: [] for cluster in wanted}
        for cluster, n in need.items():
            picks[cluster] += work.follow(cluster, n)
        progress = True
        while progress:
            progress = False
            for cluster, n in need.items():
                if len(picks[cluster]) >= n:
                    continue
                job_id = work.fresh_start(cluster)
                if job_id is None:
                    continue
                work.give(cluster, job_id)
                picks[cluster] += [job_id, *work.follow(cluster, n - len(picks[cluster]) - 1)]
                progress = True
        return picks, {}


class _Pass:
    """The working state of one :class:`Locality` pass: the files each cluster holds (growing as it takes
    jobs), how many holders each file has, per cluster the jobs sharing a file with it in a heap by (bytes
    missing there, id), and the runs of files nobody holds in a heap by (-room, first index), both kept up to
    date as files get holders (stale entries are skipped when they come up)."""

    def __init__(self, holdings: Holdings) -> None:
        self.holdings = holdings
        self.files_of = {job.job_id: job.files for job in holdings.jobs}
        self.by_file = _jobs_by_file(holdings.jobs)
        self.order = list(self.by_file)
        self.held = {cluster: set(files) for cluster, files in holdings.held.items()}
        self.holders = Counter(file for files in self.held.values() for file in files)
        self.taken: set[int] = set()
        self.missing: dict[str, dict[int, int]] = {}
        self.queue: dict[str, list[tuple[int, int]]] = {}
        self.index = {file: index for index, file in enumerate(self.order)}
        self.runs: dict[int, int] = {}  # the runs of files nobody holds: first index -> end index (excluded)
        self.starts: list[int] = []  # their first indexes, sorted
        self.free_runs: list[tuple[int, int, int, int]] = []  # heap of (-room, start, end, fresh start index)
        start = 0
        for index, file in enumerate(self.order):
            if self.holders[file]:
                self._free_run(start, index)
                start = index + 1
        self._free_run(start, len(self.order))

    def _queue(self, cluster: str) -> tuple[list[tuple[int, int]], dict[int, int]]:
        if cluster not in self.queue:
            mine = self.held.setdefault(cluster, set())
            missing = {job.job_id: 0 for job in self.holdings.jobs if not job.files}
            for file in mine:
                for job_id in self.by_file.get(file, ()):
                    if job_id not in missing:
                        missing[job_id] = self._missing(mine, job_id)
            self.missing[cluster] = missing
            self.queue[cluster] = [(count, job_id) for job_id, count in missing.items()]
            heapq.heapify(self.queue[cluster])
        return self.queue[cluster], self.missing[cluster]

    def _missing(self, mine: set[str], job_id: int) -> int:
        """The bytes of the job's files the cluster lacks."""
        return sum(self.holdings.size(f) for f in self.files_of[job_id] if f not in mine)

    def follow(self, cluster: str, n: int) -> list[int]:
        """Up to ``n`` jobs sharing a file with the cluster, fewest bytes missing there first (step 1)."""
        heap, missing = self._queue(cluster)
        chosen: list[int] = []
        while heap and len(chosen) < n:
            count, job_id = heapq.heappop(heap)
            if count == missing[job_id] and job_id not in self.taken and self.holdings.allowed(cluster, job_id):
                self.give(cluster, job_id)
                chosen.append(job_id)
        return chosen

    def give(self, cluster: str, job_id: int) -> None:
        """The cluster takes the job: its files count as held there, the jobs reading them need their bytes less."""
        heap, missing = self._queue(cluster)
        mine = self.held[cluster]
        self.taken.add(job_id)
        for file in self.files_of[job_id]:
            if file in mine:
                continue
            mine.add(file)
            self.holders[file] += 1
            if self.holders[file] == 1:
                self._held_now(file)
            size = self.holdings.size(file)
            for other in self.by_file[file]:
                if other in self.taken:
                    continue
                count = missing.get(other)
                missing[other] = self._missing(mine, other) if count is None else count - size
                heapq.heappush(heap, (missing[other], other))

    def _first_allowed(self, cluster: str, file: str) -> int | None:
        return next((j for j in self.by_file[file] if j not in self.taken and self.holdings.allowed(cluster, j)), None)

    def fresh_start(self, cluster: str) -> int | None:
        """The job a cluster sharing no file with any job left starts afresh with (step 2), None when no job
        is left that it may take."""
        while self.free_runs:
            _, start, end, first = self.free_runs[0]
            if self.runs.get(start) == end:
                job_id = self._first_allowed(cluster, self.order[first])
                if job_id is not None:
                    return job_id
                break  # the cluster must not get it (rare): as when every file has a holder
            heapq.heappop(self.free_runs)  # the run was split since
        shared = [(self.holders[file], file) for file in self.order if self._first_allowed(cluster, file) is not None]
        return self._first_allowed(cluster, min(shared, key=lambda item: item[0])[1]) if shared else None

    def _free_run(self, start: int, end: int) -> None:
        """Records the run of files nobody holds from index ``start`` to ``end`` (excluded) and where a fresh
        start goes in it: its first file, or its middle when a holder's jobs lead into it from either side
        (both stay true until one of its files gets a holder: a job leading into it holds its edge file once
        taken)."""
        if start >= end:
            return
        self.runs[start] = end
        bisect.insort(self.starts, start)
        length = end - start
        if self._entered(start - 1, start) or self._entered(end, end - 1):
            room, first = (length + 1) // 2, start + length // 2
        else:
            room, first = length, start
        heapq.heappush(self.free_runs, (-room, start, end, first))

    def _held_now(self, file: str) -> None:
        """A file nobody held gets a holder: it splits the run it was in."""
        index = self.index[file]
        at = bisect.bisect_right(self.starts, index) - 1
        start = self.starts[at]
        end = self.runs.pop(start)
        del self.starts[at]
        self._free_run(start, index)
        self._free_run(index + 1, end)

    def _entered(self, outside: int, inside: int) -> bool:
        """Whether the file at ``outside`` has a holder and a job left reads it and the file at ``inside`` (the
        holder can go on into the run one file at a time)."""
        if not 0 <= outside < len(self.order) or not self.holders[self.order[outside]]:
            return False
        before, file = self.order[outside], self.order[inside]
        return any(before in self.files_of[j] for j in self.by_file[file] if j not in self.taken)


def _jobs_by_file(jobs: Iterable[Waiting]) -> dict[str, list[int]]:
    """File -> its waiting jobs in increasing id order, files in the order of their lowest job."""
    by_file: dict[str, list[int]] = {}
    for job in jobs:
        for file in job.files:
            by_file.setdefault(file, []).append(job.job_id)
    return by_file


_PICKERS: dict[str, type] = {InOrder.name: InOrder, Locality.name: Locality}


def register(picker: type) -> type:
    """Make a picker class available by its ``name`` (usable as a class decorator)."""
    _PICKERS[picker.name] = picker
    return picker


def pickers() -> list[str]:
    return sorted(_PICKERS)


def picker(name: str) -> JobPicker:
    """The picker ``name`` (ConfigError listing the valid names for an unknown one)."""
    if name not in _PICKERS:
        raise ConfigError(f"locality: unknown job picker {name!r} (valid: {', '.join(pickers())})")
    return _PICKERS[name]()


# ---- grid policy ----------------------------------------------------------------------------------------------


def read_jobs(scenario: Mapping[str, Any]) -> tuple[Waiting, ...]:
    """The scenario's ``jobs``: a list of {"id": N, "files": [NAME, ...]} in any order (ids unique)."""
    jobs = []
    for path, item in read.records(scenario, "jobs", ("id", "files"), "id"):
        files = read.sequence(item, "files", path, [])
        for index, file in enumerate(files):
            if not isinstance(file, str) or not file:
                raise ConfigError(f"{path}.files[{index}]: must be a file name, got {file!r}")
        jobs.append(Waiting(read.integer(item, "id", path), tuple(dict.fromkeys(files))))
    return tuple(sorted(jobs, key=lambda job: job.job_id))


def read_clusters(scenario: Mapping[str, Any], allowed: tuple[str, ...]) -> tuple[dict[str, int], dict[str, Any]]:
    """The scenario's ``clusters``: {NAME: {"wants": N, ...}}, in order; returns the wants and the objects."""
    clusters = read.mapping(scenario, "clusters")
    wanted = {}
    for name, item in clusters.items():
        path = f"clusters.{name}"
        read.known(item, allowed, path)
        wanted[str(name)] = read.integer(item, "wants", path, 0)
    return wanted, {str(name): item for name, item in clusters.items()}


def _file_names(item: Mapping[str, Any], key: str, path: str) -> frozenset[str]:
    names = read.sequence(item, key, path, [])
    for index, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{path}.{key}[{index}]: must be a file name, got {name!r}")
    return frozenset(names)


def read_exclude(items: Mapping[str, Mapping[str, Any]]) -> dict[str, frozenset[int]]:
    exclude = {}
    for name, item in items.items():
        ids = read.sequence(item, "exclude", f"clusters.{name}", [])
        for index, job_id in enumerate(ids):
            if isinstance(job_id, bool) or not isinstance(job_id, int):
                raise ConfigError(f"clusters.{name}.exclude[{index}]: must be a job id, got {job_id!r}")
        exclude[name] = frozenset(ids)
    return exclude


@evaluates("locality")
def evaluate_locality(scenario: Mapping[str, Any]) -> dict:
    """BOINC's locality scheduling: which waiting jobs of one campaign each cluster takes this pass.

    Input: "jobs": [{"id": N, "files": [NAME, ...]}, ...] the campaign's waiting jobs; "clusters": {NAME:
    {"wants": jobs it takes this pass (default 0), "holds": [FILE, ...] files in its cache, "exclude": [ID, ...]
    jobs it must not get (a copy runs there)}}, in turn order; "sizes": {FILE: bytes} (a file not listed weighs
    1, so that files count alike); "picker": "locality" (default) or "in-order".
    Rules: a cluster first takes the jobs needing the fewest bytes it does not hold, among those sharing a file
    with it, lowest id first on ties; a cluster sharing none starts afresh in the longest run of files nobody
    holds (at its middle when a holder's jobs lead into it), else at the first file held by the fewest
    clusters. Output: {"picks": {NAME: [ID, ...]}}.

    Example (B holds f1 and f2 and takes job 1; A holds nothing and takes f3, the file nobody holds):
      {"jobs": [{"id": 1, "files": ["f1"]}, {"id": 2, "files": ["f2"]}, {"id": 3, "files": ["f3"]},
                {"id": 4, "files": ["f2"]}],
       "clusters": {"B": {"wants": 1, "holds": ["f2", "f1"]}, "A": {"wants": 1}}}
      -> {"picks": {"B": [1], "A": [3]}}
    """
    read.known(scenario, ("jobs", "clusters", "sizes", "picker"))
    name = read.text(scenario, "picker", default=Locality.name)
    if name not in (Locality.name, InOrder.name):
        raise ConfigError(f"picker: must be locality or in-order, got {name!r}")
    jobs = read_jobs(scenario)
    wanted, items = read_clusters(scenario, ("wants", "holds", "exclude"))
    held = {cluster: _file_names(item, "holds", f"clusters.{cluster}") for cluster, item in items.items()}
    sizes = read.mapping(scenario, "sizes", default={})
    for file, size in sizes.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ConfigError(f"sizes.{file}: must be a number of bytes, got {size!r}")
    holdings = Holdings(jobs, held, exclude=read_exclude(items), sizes={str(f): n for f, n in sizes.items()})
    picks, _ = picker(name).pick(holdings, wanted, {})
    return {"picks": picks}
