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

    def allowed(self, cluster: str, job_id: int) -> bool:
        return job_id not in self.exclude.get(cluster, frozenset())


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
    """BOINC's locality scheduling, for the clusters of one campaign in one pass:

    1. each cluster first takes the jobs all of whose files it already holds, in increasing id order (jobs
       without input files count as held everywhere);
    2. a cluster that still wants jobs takes a file: the first file (in the order of its lowest waiting job)
       held or taken by the fewest clusters, so that clusters starting afresh spread over the files instead of
       flocking onto the first one, and a file goes to a second cluster only once every file with jobs left
       has one. It takes that file's jobs in increasing id order (their other files come with them), and the
       next file while it wants more. (BOINC draws the file at random within a working set of about N/M
       files, N hosts and M replicas of each job; counting holders is the same spread, deterministic, and a
       window of N files would send a cluster to a file already being read whenever the first N are.)

    Clusters take turns in the order of ``wanted``, one file at a time in step 2. A file counts as held by a
    cluster from the moment it takes a job reading it (the file is then staged there)."""

    name = "locality"

    def pick(self, holdings: Holdings, wanted: Mapping[str, int], state: PickerState) -> tuple[Picks, PickerState]:
        taken: set[int] = set()
        held = {cluster: set(files) for cluster, files in holdings.held.items()}
        need = {cluster: n for cluster, n in wanted.items() if n > 0}
        picks: Picks = {cluster: [] for cluster in wanted}
        for cluster in need:
            mine = held.setdefault(cluster, set())
            local = (job.job_id for job in holdings.jobs if mine.issuperset(job.files))
            picks[cluster] += take(holdings, cluster, local, need[cluster], taken)
            need[cluster] -= len(picks[cluster])
        by_file = _jobs_by_file(holdings.jobs)
        files_of = {job.job_id: job.files for job in holdings.jobs}
        while any(n > 0 for n in need.values()):
            progress = False
            for cluster in [c for c, n in need.items() if n > 0]:
                file = _choose(by_file, taken, held, cluster, holdings)
                if file is None:
                    need[cluster] = 0  # nothing left it may take
                    continue
                chosen = take(holdings, cluster, by_file[file], need[cluster], taken)
                held[cluster].add(file)
                for job_id in chosen:
                    held[cluster].update(files_of[job_id])
                picks[cluster] += chosen
                need[cluster] -= len(chosen)
                progress = progress or bool(chosen)
            if not progress:
                break
        return picks, {}


def _jobs_by_file(jobs: Iterable[Waiting]) -> dict[str, list[int]]:
    """File -> its waiting jobs in increasing id order, files in the order of their lowest job."""
    by_file: dict[str, list[int]] = {}
    for job in jobs:
        for file in job.files:
            by_file.setdefault(file, []).append(job.job_id)
    return by_file


def _choose(
    by_file: Mapping[str, list[int]], taken: set[int], held: Mapping[str, set[str]], cluster: str, holdings: Holdings
) -> str | None:
    """The file a cluster wanting more work takes next (see :class:`Locality`, step 2), None when no file has
    a job left that it may take."""
    best, fewest = None, None
    for file, job_ids in by_file.items():
        if not any(j not in taken and holdings.allowed(cluster, j) for j in job_ids):
            continue
        holders = sum(file in files for other, files in held.items() if other != cluster)
        if fewest is None or holders < fewest:
            best, fewest = file, holders
            if holders == 0:
                break  # nobody holds it: none can do better
    return best


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
    jobs it must not get (a copy runs there)}}, in turn order; "picker": "locality" (default) or "in-order".
    Rules: a cluster first takes the jobs whose files it holds, lowest id first; then, one file at a time, the
    first file (by lowest job) held by the fewest clusters, its jobs lowest id first. Output: {"picks": {NAME:
    [ID, ...]}}.

    Example (B holds f1 and f2 and takes job 1; A holds nothing and takes f3, the first file nobody holds):
      {"jobs": [{"id": 1, "files": ["f1"]}, {"id": 2, "files": ["f2"]}, {"id": 3, "files": ["f3"]},
                {"id": 4, "files": ["f2"]}],
       "clusters": {"B": {"wants": 1, "holds": ["f2", "f1"]}, "A": {"wants": 1}}}
      -> {"picks": {"B": [1], "A": [3]}}
    """
    read.known(scenario, ("jobs", "clusters", "picker"))
    name = read.text(scenario, "picker", default=Locality.name)
    if name not in (Locality.name, InOrder.name):
        raise ConfigError(f"picker: must be locality or in-order, got {name!r}")
    jobs = read_jobs(scenario)
    wanted, items = read_clusters(scenario, ("wants", "holds", "exclude"))
    held = {cluster: _file_names(item, "holds", f"clusters.{cluster}") for cluster, item in items.items()}
    picks, _ = picker(name).pick(Holdings(jobs, held, exclude=read_exclude(items)), wanted, {})
    return {"picks": picks}
