"""A simulated cluster implementing the resource-manager contract (cigri.adapters).

A cluster is made of nodes, each with its cores and its properties (OAR's: ``gpu='yes'``). A job asks,
as a JDL does, for ``resources`` (``/nodes=N/core=C``: N nodes with C free cores each) and
``properties`` (``name='value'`` joined by AND, which the nodes must all have); it is placed on the
first nodes that fit and frees them when it ends. A request no node of the cluster could ever satisfy
is refused at submission (SubmitError), as a real resource manager refuses it.

Its jobs live on the simulated clock: a submitted job waits ``delay`` seconds, starts FIFO when its nodes are
free, and runs its duration (read from its params, divided by ``speed``, plus staging time). Non-grid local load
comes and goes, takes cores on one node, and preempts best-effort grid jobs; jobs fail with probability
``failure``, and exit 2 when one of their input files is not in the cluster's cache (never staged there, or
deleted while they ran: cigri's mistake, shown as failures); during an outage the cluster answers nothing, runs
nothing, and the jobs it ran are lost; a black-hole cluster (from ``black_hole_from`` on) ends every job it
starts at once with exit 0 (the seed's sink effect), and records when each such end happened.

The cluster records what really happened (:class:`Usage`), and the clusters of one simulated world share a
:class:`Ledger` of the scenario's jobs that ran to a real end: the simulator's metrics come from these
records, never from what cigri counts about itself.
"""

from __future__ import annotations

import hashlib
import heapq
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import JdlError, SubmitError, TransportError
from ..jdl import parse_resources, property_terms, resource_slots
from ..model import Capacity, DataFile, JobSpec, KillCause, RemoteState, RemoteStatus
from .fileserver import FileServer

BLACK_HOLE_DURATION = 0.01


def parse_properties(text: str, path: str) -> dict[str, str]:
    """OAR properties ``name='value' AND ...`` as {name: value}: the form the Slurm adapter accepts."""
    terms = property_terms(text)
    if isinstance(terms, str):
        raise JdlError(path, f"expected name='value' terms joined by AND, not {text!r}")
    return dict(terms)


def request(resources: str, properties: str, path: str) -> tuple[int, int, dict[str, str]]:
    """(nodes, cores on each, properties) a JDL's ``resources`` and ``properties`` ask for; a JdlError names
    ``path.resources`` or ``path.properties``."""
    nodes, cores = resource_slots(parse_resources(resources, f"{path}.resources"))
    return nodes, cores, parse_properties(properties, f"{path}.properties")


def valid_property(name: str, value: str) -> bool:
    """Can a job ask for this node property (``name='value'``)?"""
    return property_terms(f"{name}='{value}'") == [(name, value)]


# why the simulated RM killed a job, from its reason (an outage's jobs are lost: OTHER)
KILL_CAUSES = {"walltime": KillCause.WALLTIME, "preempted": KillCause.PREEMPTED, "cancelled": KillCause.ADMIN}
# an enum's member is a lookup through its class each time (as slow as a small call): read once, as every job's
# every event asks them
PENDING, RUNNING, EXITED, KILLED = RemoteState.PENDING, RemoteState.RUNNING, RemoteState.EXITED, RemoteState.KILLED
OTHER = KillCause.OTHER


@dataclass(frozen=True)
class NodeGroup:
    """``count`` alike nodes."""

    count: int
    cores: int
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    nodes: tuple[NodeGroup, ...]
    speed: float = 1.0
    delay: float = 0.0  # seconds between submission and the earliest start
    failure: float = 0.0  # probability that a job exits 1
    outages: tuple[tuple[float, float], ...] = ()
    black_hole: bool = False
    black_hole_from: float = 0.0  # a black hole from then on (jobs started before run as on any cluster)
    bandwidth: float = 0.0  # bytes per second for input staging (0: no staging cost)
    cache_quota: int | None = None  # the cluster's cache_quota (bytes; None: none)
    local_rate: float = 0.0  # non-grid jobs arriving per second
    local_duration: float = 3600.0  # their mean duration
    local_size: int = 1  # cores each takes, on one node
    local_steps: tuple[tuple[float, int], ...] = ()  # (from when, cores local users hold from then on)
    queue_depth: int | None = None
    best_effort: bool = True

    @property
    def slots(self) -> int:
        return sum(group.count * group.cores for group in self.nodes)

    def node_list(self) -> list[NodeGroup]:
        """One entry per node, in the order they are given (first fit follows it)."""
        return [group for group in self.nodes for _ in range(group.count)]

    def need(self, nodes: int, cores: int, properties: dict[str, str]) -> Need:
        """``nodes`` nodes with ``cores`` cores each and all the ``properties``: which nodes qualify."""
        eligible = tuple(
            i
            for i, node in enumerate(self.node_list())
            if node.cores >= cores and all(node.properties.get(k) == v for k, v in properties.items())
        )
        return Need(nodes, cores, eligible)


@dataclass(frozen=True)
class Need:
    """What a job of one request takes: ``nodes`` nodes among ``eligible`` (in first-fit order), ``cores``
    cores on each."""

    nodes: int
    cores: int
    eligible: tuple[int, ...]

    @property
    def slots(self) -> int:
        return self.nodes * self.cores

    @property
    def possible(self) -> bool:
        """Could the cluster run it at all, were it empty?"""
        return len(self.eligible) >= self.nodes


@dataclass
class SimJob:
    remote_id: str
    job_id: int  # cigri's job
    user: str
    need: Need
    slots: int  # cores it holds, on all its nodes
    duration: float
    best_effort: bool
    walltime: float
    inputs: tuple[str, ...]
    submitted: float
    eligible: float
    state: RemoteState = PENDING
    placed: tuple[int, ...] = ()  # the nodes it runs on
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    reason: str = ""
    generation: int = 0  # bumped when the job stops, to ignore its stale end event
    work: str = ""  # the scenario job it runs (its param's name), whichever cigri job carries it
    sink: bool = False  # started on a black hole: it ends at once, and did nothing


@dataclass
class Ledger:
    """The simulated world's record, across its clusters, of the scenario jobs that ran to a real end (exit 0,
    not on a black hole): how many times each did; and of their runs that failed or were killed."""

    completed: dict[str, int] = field(default_factory=dict)
    cores_by_user: dict[str, int] = field(default_factory=dict)  # cores of each user's completed jobs
    firsts: list[tuple[str, float]] = field(default_factory=list)  # (scenario job, when) of each first completion
    first_ends: dict[str, tuple[str, float]] = field(default_factory=dict)  # scenario job -> (cluster, when) first
    failed: dict[str, int] = field(default_factory=dict)  # scenario job -> its runs that exited non-zero
    killed: dict[str, int] = field(default_factory=dict)  # scenario job -> its runs killed while running


@dataclass
class Usage:
    """What the metrics need from a cluster, accumulated as time advances."""

    grid_slot_seconds: float = 0.0
    wasted_slot_seconds: float = 0.0  # held by jobs that were killed (preempted, outage, walltime, cancelled)
    useful_slot_seconds: float = 0.0  # held by the first real completion of a scenario job
    failed_slot_seconds: float = 0.0  # held by jobs that exited non-zero
    duplicate_slot_seconds: float = 0.0  # held by completions of a scenario job that had already completed
    superseded_slot_seconds: float = 0.0  # of the killed: copies cancelled once another copy of their job completed
    available_slot_seconds: float = 0.0  # what the grid could use: slots, unless down, less local users' cores
    local_slot_seconds: float = 0.0  # what local users' jobs held
    local_wait_core_seconds: float = 0.0  # cores local jobs waited for while grid jobs held cores
    down_seconds: float = 0.0
    started: int = 0
    ended: int = 0
    killed: int = 0
    cancelled_queued: int = 0  # queued jobs cancelled before they started (nikita's flooding and timeouts, take-backs)
    superseded: int = 0  # of the killed: copies cancelled once another copy of their job completed (finalize)
    black_hole_ends: int = 0
    black_hole_times: list[float] = field(default_factory=list)  # when each job a black hole swallowed ended
    bytes_staged: int = 0
    files_staged: int = 0
    files_deleted: int = 0
    by_user: dict[str, float] = field(default_factory=dict)  # slot-seconds each user's jobs held
    completions: dict[int, int] = field(default_factory=dict)  # cigri job -> successful runs
    availability: list[tuple[float, int]] = field(default_factory=list)  # (from when, slots the grid could use)


def refusal(spec: ClusterSpec, resources: str, properties: str, need: Need) -> str:
    """Why a cluster can never run a request (OAR: "There are not enough resources for your request")."""
    with_properties = f" with {properties}" if properties.strip() else ""
    return (
        f"{spec.name}: not enough resources for {resources}{with_properties} (nodes with at least "
        f"{need.cores} cores{' and those properties' if with_properties else ''}: "
        f"{len(need.eligible)} of {len(spec.node_list())}, {need.nodes} needed)"
    )


class SimCluster:
    """Implements the ResourceManager contract; :meth:`advance_to` moves it along the simulated clock."""

    options = ()
    answers_at_once = True  # no I/O: the cycle calls it on its own thread (see cigri.calls)

    def __init__(
        self,
        spec: ClusterSpec,
        clock,
        rng: random.Random,
        ledger: Ledger | None = None,
    ):
        self.spec = spec
        self.name = spec.name
        self.clock = clock
        self.rng = rng
        self.salt = rng.getrandbits(64)  # this cluster's failure draws: see :meth:`_fails`
        self.runs: dict[str, int] = {}  # runs of each scenario job that ended here, by its work
        self.best_effort = spec.best_effort
        self.queue_depth = spec.queue_depth if spec.queue_depth is not None else max(16, spec.slots // 4)
        self.max_batch = None
        self.arrivals: dict[str, float] = {}  # each file in its cache: when its staging ends (link queued)
        self.link_free = 0.0  # when the cluster's link has sent every file asked so far
        self.slots = spec.slots
        self.free = [node.cores for node in spec.node_list()]  # free cores of each node
        self.needs: dict[tuple[str, str], Need] = {}  # by (resources, properties)
        self.jobs: dict[str, SimJob] = {}
        self.batches: dict[str, list[str]] = {}
        self.pending: deque[str] = deque()
        self.waiting = 0  # jobs submitted and not started nor cancelled
        self.pending_slots = 0  # and the slots they ask
        self.running: dict[str, SimJob] = {}
        self.grid_used = 0
        self.local_used = 0
        self.local_waiting: deque[tuple[float | None, int]] = deque()  # (duration, None: a step's; size)
        self.step_nodes: list[int] = []  # the node of each core local users hold for a step of local load
        self.step_level = 0  # cores the current step of local load asks for
        self.io_weight = 0.0  # the I/O weight of the running grid jobs (what loads the file server)
        self.file_server: FileServer | None = None  # the scenario's, when it serves this cluster
        self.weight_of: Callable[[str], float] = lambda work: 1.0  # a scenario job's I/O weight
        self.events: list[tuple[float, int, str, object]] = []
        self.seq = 0
        self.now = 0.0
        self.usage = Usage()
        self.ledger = ledger or Ledger()
        self.grid_by_user: dict[str, int] = {}  # cores each user's grid jobs hold now
        self.changed: set[str] = set()
        self._next_id = 1
        for start, end in spec.outages:
            self._push(start, "outage", True)
            self._push(end, "outage", False)
        self.down = False
        self._note_available()
        if spec.local_rate > 0:
            self._push(rng.expovariate(spec.local_rate), "local_arrival", None)
        for when, cores in spec.local_steps:
            self._push(when, "local_step", cores)

    # ---- the event heap -------------------------------------------------------------------------

    def _push(self, t: float, kind: str, payload: object) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, payload))

    def advance_to(self, t: float) -> None:
        """Process everything that happens up to time t, in order."""
        while self.events and self.events[0][0] <= t:
            when, _, kind, payload = heapq.heappop(self.events)
            self._account(when)
            getattr(self, f"_on_{kind}")(payload)
            self._start_what_fits()
            self._note_available()
        self._account(t)
        self._start_what_fits()
        self._note_available()

    def available(self) -> int:
        """Cores the grid could use now: none while down, and not those local users hold."""
        return 0 if self.down else self.slots - self.local_used

    def _note_available(self) -> None:
        """Record when the capacity left to the grid changes (the lower bound integrates it)."""
        timeline = self.usage.availability
        now, available = self.now, self.available()
        if timeline and timeline[-1][1] == available:
            return
        if timeline and timeline[-1][0] == now:
            timeline.pop()
        timeline.append((now, available))

    def _account(self, t: float) -> None:
        if t > self.now:
            span = t - self.now
            self.usage.grid_slot_seconds += self.grid_used * span
            self.usage.available_slot_seconds += self.available() * span
            self.usage.local_slot_seconds += self.local_used * span
            if self.grid_used:
                self.usage.local_wait_core_seconds += sum(size for _, size in self.local_waiting) * span
            self.usage.down_seconds += span if self.down else 0.0
            self.now = t

    # ---- what happens ---------------------------------------------------------------------------

    def _on_outage(self, starting: bool) -> None:
        self.down = starting
        if starting:  # the jobs it ran are lost with it
            for job in list(self.running.values()):
                self._stop(job, KILLED, None, "outage")

    def _on_eligible(self, _payload) -> None:
        pass  # a pending job may start now: _start_what_fits runs after every event

    def _on_end(self, payload: tuple[str, int]) -> None:
        remote_id, generation = payload
        job = self.jobs.get(remote_id)
        if job is None or job.state != RUNNING or job.generation != generation:
            return
        if job.walltime and job.duration > job.walltime:
            self._stop(job, KILLED, None, "walltime")
        else:
            failed = self.spec.failure > 0 and self._fails(job)
            missing = any(path not in self.arrivals for path in job.inputs)  # cigri did not stage it here
            self._stop(job, EXITED, 2 if missing else 1 if failed else 0, "")

    def _fails(self, job: SimJob) -> bool:
        """Does this run of the job fail? Its own draw, from the cluster's salt, the job and which of its
        runs here this is: the same whatever other jobs end before it (common random numbers: two schedules
        of the same world fail the same runs, so their difference is theirs, not the luck of the draw)."""
        work = job.work or job.remote_id
        run = self.runs[work] = self.runs.get(work, 0) + 1
        digest = hashlib.blake2b(f"{self.salt}:{work}:{run}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2**64 < self.spec.failure

    def _on_local_arrival(self, _payload) -> None:
        duration = self.rng.expovariate(1 / self.spec.local_duration)
        self.local_waiting.append((duration, self.spec.local_size))
        self._push(self.now + self.rng.expovariate(self.spec.local_rate), "local_arrival", None)

    def _on_local_step(self, cores: int) -> None:
        """Local users hold ``cores`` cores from now on (one-core units, started as local jobs are):
        more ask for the difference, fewer give back the units still waiting, then those held."""
        change, self.step_level = cores - self.step_level, cores
        self.local_waiting.extend([(None, 1)] * max(0, change))
        while change < 0:
            units = [i for i, (duration, _) in enumerate(self.local_waiting) if duration is None]
            if units:
                del self.local_waiting[units[-1]]
            else:
                self.free[self.step_nodes.pop()] += 1
                self.local_used -= 1
            change += 1

    def _on_local_end(self, payload: tuple[int, int]) -> None:
        node, size = payload
        self.free[node] += size
        self.local_used -= size

    def _stop(self, job: SimJob, state: RemoteState, exit_code: int | None, reason: str) -> None:
        del self.running[job.remote_id]
        self.grid_used -= job.slots
        self._load_files(-self.weight_of(job.work))
        for node in job.placed:
            self.free[node] += job.need.cores
        job.state, job.exit_code, job.reason, job.ended = state, exit_code, reason, self.now
        job.generation += 1
        self.usage.ended += 1
        self.grid_by_user[job.user] -= job.slots
        held = job.slots * (self.now - job.started)
        self.usage.by_user[job.user] = self.usage.by_user.get(job.user, 0.0) + held
        if job.sink and state == EXITED:
            self.usage.black_hole_times.append(self.now)
        if state == EXITED and exit_code == 0:
            self.usage.completions[job.job_id] = self.usage.completions.get(job.job_id, 0) + 1
            self._record_completion(job, held)
        elif state == EXITED:
            self.usage.failed_slot_seconds += held
            self.ledger.failed[job.work] = self.ledger.failed.get(job.work, 0) + 1
        if state == KILLED:
            self.usage.killed += 1
            self.ledger.killed[job.work] = self.ledger.killed.get(job.work, 0) + 1
            self.usage.wasted_slot_seconds += held
            if reason == "cancelled" and self.ledger.completed.get(job.work):
                self.usage.superseded += 1
                self.usage.superseded_slot_seconds += held
        self.changed.add(job.remote_id)

    def _record_completion(self, job: SimJob, held: float) -> None:
        """A successful end is real work once per scenario job; again, it is a duplicate; on a black hole, none."""
        if job.sink:
            return
        runs = self.ledger.completed.get(job.work, 0)
        self.ledger.completed[job.work] = runs + 1
        if runs:
            self.usage.duplicate_slot_seconds += held
            return
        self.ledger.firsts.append((job.work, self.now))
        self.ledger.first_ends[job.work] = (self.name, self.now)
        self.ledger.cores_by_user[job.user] = self.ledger.cores_by_user.get(job.user, 0) + job.slots
        self.usage.useful_slot_seconds += held

    def _start_what_fits(self) -> None:
        if self.down:
            return
        total = self.slots
        while self.local_waiting:  # local users first; best-effort grid jobs make room
            duration, size = self.local_waiting[0]
            node = self._node_for_local(size)
            if node is None:
                break
            self.local_waiting.popleft()
            self.local_used += size
            self.free[node] -= size
            if duration is None:
                self.step_nodes.append(node)
            else:
                self._push(self.now + duration, "local_end", (node, size))
        while self.pending:
            job = self.jobs.get(self.pending[0])
            if job is None or job.state != PENDING:
                self.pending.popleft()
                continue
            if job.eligible > self.now or total - self.grid_used - self.local_used < job.slots:
                break
            placed = self._place(job.need)
            if placed is None:
                break
            self.pending.popleft()
            self.waiting -= 1
            self.pending_slots -= job.slots
            self._run(job, placed)

    def _load_files(self, change: float) -> None:
        """A grid job started (or stopped): the file server it reads from sees its I/O weight."""
        self.io_weight += change
        if self.file_server is not None:
            self.file_server.change(self.name, self.now, self.io_weight)

    def _place(self, need: Need) -> tuple[int, ...] | None:
        """The first ``need.nodes`` eligible nodes with ``need.cores`` free cores, if there are that many."""
        free, cores = self.free, need.cores
        chosen = []
        for node in need.eligible:
            if free[node] >= cores:
                chosen.append(node)
                if len(chosen) == need.nodes:
                    return tuple(chosen)
        return None

    def _node_for_local(self, size: int) -> int | None:
        """The node a local job of ``size`` cores starts on: the first with enough free cores, else the one
        where preempting best-effort grid jobs (the latest started first) frees the most. As when the
        cluster was one pool of cores, they are preempted even when that is not enough: the local job then
        waits for the rest."""
        for node, free in enumerate(self.free):
            if free >= size:
                return node
        victims: dict[int, list[SimJob]] = {}
        for job in self.running.values():
            if job.best_effort:
                for node in job.placed:
                    victims.setdefault(node, []).append(job)
        if not victims:
            return None
        reclaimable = {node: self.free[node] + sum(j.need.cores for j in jobs) for node, jobs in victims.items()}
        target = max(sorted(reclaimable), key=reclaimable.__getitem__)  # the first node of the most
        for victim in sorted(victims[target], key=lambda j: (j.started, j.remote_id), reverse=True):
            if self.free[target] >= size:
                break
            self._stop(victim, KILLED, None, "preempted")
        return target if self.free[target] >= size else None

    def _run(self, job: SimJob, placed: tuple[int, ...]) -> None:
        job.sink = self.spec.black_hole and self.now >= self.spec.black_hole_from
        duration = BLACK_HOLE_DURATION if job.sink else job.duration / self.spec.speed
        if job.inputs and not job.sink:  # its slot is held until its files have arrived
            duration += max(0.0, max(self.arrivals.get(path, self.now) for path in job.inputs) - self.now)
        job.state, job.started, job.placed = RUNNING, self.now, placed
        job.duration = duration
        self.running[job.remote_id] = job
        self.grid_used += job.slots
        self._load_files(self.weight_of(job.work))
        self.grid_by_user[job.user] = self.grid_by_user.get(job.user, 0) + job.slots
        for node in placed:
            self.free[node] -= job.need.cores
        self.usage.started += 1
        if job.sink:
            self.usage.black_hole_ends += 1
        self.changed.add(job.remote_id)
        end = self.now + (min(duration, job.walltime) if job.walltime else duration)
        self._push(end, "end", (job.remote_id, job.generation))

    # ---- the resource-manager contract ----------------------------------------------------------

    def _reachable(self) -> None:
        if self.down:
            raise TransportError("simulated outage")

    def check(self, settings: dict, path: str) -> None:
        """Only the form of the request: one no node can satisfy is refused at submission, as an RM does."""
        request(settings["resources"], settings.get("properties") or "", path)

    def _need(self, resources: str, properties: str) -> Need:
        key = (resources, properties)
        need = self.needs.get(key)
        if need is None:
            try:
                need = self.needs[key] = self.spec.need(*request(resources, properties, "job"))
            except JdlError as exc:  # check() refuses it first; an RM would refuse it here
                raise SubmitError(f"{self.name}: {exc}") from exc
        if not need.possible:
            raise SubmitError(refusal(self.spec, resources, properties, need))
        return need

    def capacity(self) -> Capacity:
        self._reachable()
        queued = self.waiting
        return Capacity(
            total=self.slots, used=self.grid_used + self.local_used, grid_used=self.grid_used, queued=queued
        )

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        self._reachable()
        if batch_key in self.batches:
            return self.batches[batch_key]
        needs = [self._need(spec.resources, spec.properties) for spec in specs]  # all refused, or none
        ids = []
        for spec, need in zip(specs, needs, strict=True):
            remote_id = str(self._next_id)
            self._next_id += 1
            duration = float(spec.argv[2]) if len(spec.argv) > 2 else 0.0
            inputs = tuple(f"{spec.env.get('CIGRI_INPUT_DIR', '')}/{key}" for key in spec.inputs)
            job = SimJob(
                remote_id,
                spec.job_id,
                spec.user,
                need,
                need.slots,
                duration,
                spec.best_effort and self.best_effort,
                float(spec.walltime),
                inputs,
                self.now,
                self.now + self.spec.delay,
                work=spec.argv[1] if len(spec.argv) > 1 else spec.name,
            )
            self.jobs[remote_id] = job
            self.pending.append(remote_id)
            self.waiting += 1
            self.pending_slots += job.slots
            ids.append(remote_id)
            if self.spec.delay:
                self._push(job.eligible, "eligible", None)
        self.batches[batch_key] = ids
        self._start_what_fits()
        return ids

    def find_batch(self, batch_key: str) -> list[str] | None:
        self._reachable()
        return self.batches.get(batch_key)

    # ---- files (cigri.adapters.files.FileAccess): the world's own record of the bytes staged ------------

    def cache_dir(self) -> str:
        return f"/sim/{self.name}/cache"

    def job_path(self, directory: str, name: str) -> str:
        return f"{directory}/{name}"

    def put_file(self, source, target: str, expected: DataFile) -> str:
        """Stage a file: its bytes counted, its arrival after those queued on the link (at ``bandwidth``)."""
        self._reachable()
        self.usage.bytes_staged += expected.size
        self.usage.files_staged += 1
        start = max(self.now, self.link_free)
        self.link_free = start + (expected.size / self.spec.bandwidth if self.spec.bandwidth else 0.0)
        self.arrivals[target] = self.link_free
        return expected.sha256

    def get_file(self, source: str, target) -> str | None:
        return None  # simulated jobs write nothing (scenarios declare no outputs)

    def remove_paths(self, paths: Sequence[str]) -> None:
        self._reachable()
        for path in paths:
            if self.arrivals.pop(path, None) is not None:
                self.usage.files_deleted += 1

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        """Jobs that changed since the last call (the cycle acts only on changes; unchanged jobs would be
        reported as before, so leaving them out changes nothing but the cost)."""
        self._reachable()
        asked = self.changed.intersection(remote_ids)
        self.changed -= asked
        out = {}
        for remote_id in asked:
            job = self.jobs[remote_id]
            cause = KILL_CAUSES.get(job.reason, OTHER) if job.state == KILLED else None
            out[remote_id] = RemoteStatus.of(
                remote_id, job.state, job.exit_code, job.started, job.ended, job.reason, cause
            )
            if job.state in (EXITED, KILLED):
                del self.jobs[remote_id]  # reported: a week of millions of jobs need not stay in memory
        return out

    reports_changes = True  # changed_ids(): the updator reads, and asks the states of, only those jobs

    def changed_ids(self) -> list[str]:
        """The jobs whose state changed and that :meth:`states` has not reported since."""
        self._reachable()
        return list(self.changed)

    def cancel(self, remote_ids: Sequence[str]) -> None:
        self._reachable()
        for remote_id in remote_ids:
            job = self.jobs.get(remote_id)
            if job is None:
                continue
            if job.state == RUNNING:
                self._stop(job, KILLED, None, "cancelled")
            elif job.state == PENDING:
                job.state, job.reason, job.ended = KILLED, "cancelled", self.now
                self.waiting -= 1
                self.pending_slots -= job.slots
                self.usage.cancelled_queued += 1
                self.changed.add(remote_id)
        self._start_what_fits()
        self._note_available()

    def hold(self, remote_ids: Sequence[str]) -> None:
        """Held jobs leave the queue, still pending (and counted as queued, as Slurm and OAR count them)."""
        self._reachable()
        held = set(remote_ids)
        self.pending = deque(remote_id for remote_id in self.pending if remote_id not in held)

    def release(self, remote_ids: Sequence[str]) -> None:
        """Held jobs go back to their place in the queue (submission order); others are left as they are."""
        self._reachable()
        queued = set(self.pending)
        back = [r for r in remote_ids if r not in queued and (job := self.jobs.get(r)) and job.state == PENDING]
        self.pending = deque(sorted([*self.pending, *back], key=int))
        self._start_what_fits()

    def waiting_slots(self) -> int:
        """Slots of the grid jobs waiting in its queue (held ones included, as capacity counts them)."""
        return self.pending_slots

    def server_load(self, host: str) -> float:
        """The load of the scenario's file server, when it is ``host`` and serves this cluster."""
        self._reachable()
        if self.file_server is None or self.file_server.spec.host != host:
            raise TransportError(f"{self.name}: cannot read the load of {host}: no such file server here")
        return self.file_server.load_at(self.now)

    def tail(self, remote_id: str, stream: str, lines: int) -> str:
        job = self.jobs.get(remote_id)
        return f"simulated failure of job {remote_id}" if job and job.exit_code else ""

    def activity(self) -> object:
        """Changes when one of its jobs ends: what wakes a looping almighty. Starts are left out, as the Slurm
        adapters leave them: most follow cigri's own submission, and would wake it for nothing."""
        return self.usage.ended

    def close(self) -> None:
        pass
