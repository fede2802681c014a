"""A simulated cluster implementing the resource-manager contract (cigri.adapters).

Its jobs live on the simulated clock: a submitted job waits ``delay`` seconds, starts FIFO when enough
slots are free, and runs its duration (read from its params, divided by ``speed``, plus staging time).
Non-grid local load comes and goes and preempts best-effort grid jobs; jobs fail with probability
``failure``; during an outage the cluster answers nothing, runs nothing, and the jobs it ran are lost;
a black-hole cluster ends every job at once with exit 0 (the seed's sink effect).
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import TransportError
from ..model import Capacity, JobSpec, RemoteState, RemoteStatus

BLACK_HOLE_DURATION = 0.01


@dataclass
class ClusterSpec:
    name: str
    slots: int
    speed: float = 1.0
    delay: float = 0.0  # seconds between submission and the earliest start
    failure: float = 0.0  # probability that a job exits 1
    outages: list[tuple[float, float]] = field(default_factory=list)
    black_hole: bool = False
    bandwidth: float = 0.0  # bytes per second for input staging (0: no staging cost)
    local_rate: float = 0.0  # non-grid jobs arriving per second
    local_duration: float = 3600.0  # their mean duration
    local_size: int = 1  # slots each takes
    queue_depth: int | None = None
    best_effort: bool = True


@dataclass
class SimJob:
    remote_id: str
    job_id: int  # cigri's job
    user: str
    slots: int
    duration: float
    best_effort: bool
    walltime: float
    inputs: tuple[str, ...]
    submitted: float
    eligible: float
    state: RemoteState = RemoteState.PENDING
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    reason: str = ""
    generation: int = 0  # bumped when the job stops, to ignore its stale end event


@dataclass
class Usage:
    """What the metrics need from a cluster, accumulated as time advances."""

    grid_slot_seconds: float = 0.0
    wasted_slot_seconds: float = 0.0
    started: int = 0
    ended: int = 0
    killed: int = 0
    black_hole_ends: int = 0
    bytes_staged: int = 0
    by_user: dict[str, float] = field(default_factory=dict)  # slot-seconds each user's jobs held
    completions: dict[int, int] = field(default_factory=dict)  # cigri job -> successful runs


class SimCluster:
    """Implements the ResourceManager contract; :meth:`advance_to` moves it along the simulated clock."""

    options = ()

    def __init__(self, spec: ClusterSpec, clock, rng: random.Random, file_sizes: dict[str, int] | None = None):
        self.spec = spec
        self.name = spec.name
        self.clock = clock
        self.rng = rng
        self.best_effort = spec.best_effort
        self.queue_depth = spec.queue_depth if spec.queue_depth is not None else max(16, spec.slots // 4)
        self.max_batch = None
        self.file_sizes = file_sizes or {}
        self.cached: set[str] = set()
        self.jobs: dict[str, SimJob] = {}
        self.batches: dict[str, list[str]] = {}
        self.pending: deque[str] = deque()
        self.waiting = 0  # jobs submitted and not started nor cancelled
        self.running: dict[str, SimJob] = {}
        self.grid_used = 0
        self.local_used = 0
        self.local_waiting: deque[tuple[float, int]] = deque()  # (duration, size)
        self.events: list[tuple[float, int, str, object]] = []
        self.seq = 0
        self.now = 0.0
        self.usage = Usage()
        self.changed: set[str] = set()
        self._next_id = 1
        for start, end in spec.outages:
            self._push(start, "outage", True)
            self._push(end, "outage", False)
        self.down = False
        if spec.local_rate > 0:
            self._push(rng.expovariate(spec.local_rate), "local_arrival", None)

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
        self._account(t)
        self._start_what_fits()

    def _account(self, t: float) -> None:
        if t > self.now:
            self.usage.grid_slot_seconds += self.grid_used * (t - self.now)
            self.now = t

    # ---- what happens ---------------------------------------------------------------------------

    def _on_outage(self, starting: bool) -> None:
        self.down = starting
        if starting:  # the jobs it ran are lost with it
            for job in list(self.running.values()):
                self._stop(job, RemoteState.KILLED, None, "outage")

    def _on_eligible(self, _payload) -> None:
        pass  # a pending job may start now: _start_what_fits runs after every event

    def _on_end(self, payload: tuple[str, int]) -> None:
        remote_id, generation = payload
        job = self.jobs.get(remote_id)
        if job is None or job.state != RemoteState.RUNNING or job.generation != generation:
            return
        if job.walltime and job.duration > job.walltime:
            self._stop(job, RemoteState.KILLED, None, "walltime")
        else:
            failed = self.spec.failure > 0 and self.rng.random() < self.spec.failure
            self._stop(job, RemoteState.EXITED, 1 if failed else 0, "")

    def _on_local_arrival(self, _payload) -> None:
        duration = self.rng.expovariate(1 / self.spec.local_duration)
        self.local_waiting.append((duration, self.spec.local_size))
        self._push(self.now + self.rng.expovariate(self.spec.local_rate), "local_arrival", None)

    def _on_local_end(self, size: int) -> None:
        self.local_used -= size

    def _stop(self, job: SimJob, state: RemoteState, exit_code: int | None, reason: str) -> None:
        del self.running[job.remote_id]
        self.grid_used -= job.slots
        job.state, job.exit_code, job.reason, job.ended = state, exit_code, reason, self.now
        job.generation += 1
        self.usage.ended += 1
        held = job.slots * (self.now - (job.started or self.now))
        self.usage.by_user[job.user] = self.usage.by_user.get(job.user, 0.0) + held
        if state == RemoteState.EXITED and exit_code == 0:
            self.usage.completions[job.job_id] = self.usage.completions.get(job.job_id, 0) + 1
        if state == RemoteState.KILLED:
            self.usage.killed += 1
            self.usage.wasted_slot_seconds += job.slots * (self.now - (job.started or self.now))
        self.changed.add(job.remote_id)

    def _start_what_fits(self) -> None:
        if self.down:
            return
        total = self.spec.slots
        while self.local_waiting:  # local users first; best-effort grid jobs make room
            duration, size = self.local_waiting[0]
            while total - self.grid_used - self.local_used < size and self._preempt_one():
                pass
            if total - self.grid_used - self.local_used < size:
                break
            self.local_waiting.popleft()
            self.local_used += size
            self._push(self.now + duration, "local_end", size)
        while self.pending:
            job = self.jobs.get(self.pending[0])
            if job is None or job.state != RemoteState.PENDING:
                self.pending.popleft()
                continue
            if job.eligible > self.now or total - self.grid_used - self.local_used < job.slots:
                break
            self.pending.popleft()
            self.waiting -= 1
            self._run(job)

    def _preempt_one(self) -> bool:
        victims = [j for j in self.running.values() if j.best_effort]
        if not victims:
            return False
        victim = max(victims, key=lambda j: (j.started, j.remote_id))  # the latest started goes first
        self._stop(victim, RemoteState.KILLED, None, "preempted")
        return True

    def _run(self, job: SimJob) -> None:
        duration = BLACK_HOLE_DURATION if self.spec.black_hole else job.duration / self.spec.speed
        if self.spec.bandwidth and not self.spec.black_hole:
            missing = [f for f in job.inputs if f not in self.cached]
            size = sum(self.file_sizes.get(f, 0) for f in missing)
            self.usage.bytes_staged += size
            self.cached.update(missing)
            duration += size / self.spec.bandwidth
        job.state, job.started = RemoteState.RUNNING, self.now
        job.duration = duration
        self.running[job.remote_id] = job
        self.grid_used += job.slots
        self.usage.started += 1
        if self.spec.black_hole:
            self.usage.black_hole_ends += 1
        self.changed.add(job.remote_id)
        end = self.now + (min(duration, job.walltime) if job.walltime else duration)
        self._push(end, "end", (job.remote_id, job.generation))

    # ---- the resource-manager contract ----------------------------------------------------------

    def _reachable(self) -> None:
        if self.down:
            raise TransportError("simulated outage")

    def check(self, settings: dict, path: str) -> None:
        pass

    def capacity(self) -> Capacity:
        self._reachable()
        queued = self.waiting
        return Capacity(
            total=self.spec.slots, used=self.grid_used + self.local_used, grid_used=self.grid_used, queued=queued
        )

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        self._reachable()
        if batch_key in self.batches:
            return self.batches[batch_key]
        ids = []
        for spec in specs:
            remote_id = str(self._next_id)
            self._next_id += 1
            duration = float(spec.argv[2]) if len(spec.argv) > 2 else 0.0
            inputs = tuple(spec.argv[3].split(",")) if len(spec.argv) > 3 and spec.argv[3] else ()
            job = SimJob(
                remote_id,
                spec.job_id,
                spec.user,
                spec.slots,
                duration,
                spec.best_effort and self.best_effort,
                float(spec.walltime),
                inputs,
                self.now,
                self.now + self.spec.delay,
            )
            self.jobs[remote_id] = job
            self.pending.append(remote_id)
            self.waiting += 1
            ids.append(remote_id)
            if self.spec.delay:
                self._push(job.eligible, "eligible", None)
        self.batches[batch_key] = ids
        self._start_what_fits()
        return ids

    def find_batch(self, batch_key: str) -> list[str] | None:
        self._reachable()
        return self.batches.get(batch_key)

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        """Jobs that changed since the last call (the cycle acts only on changes; unchanged jobs would be
        reported as before, so leaving them out changes nothing but the cost)."""
        self._reachable()
        asked = self.changed.intersection(remote_ids)
        self.changed -= asked
        out = {}
        for remote_id in asked:
            job = self.jobs[remote_id]
            out[remote_id] = RemoteStatus(remote_id, job.state, job.exit_code, job.started, job.ended, job.reason)
            if job.state in (RemoteState.EXITED, RemoteState.KILLED):
                del self.jobs[remote_id]  # reported: a week of millions of jobs need not stay in memory
        return out

    def cancel(self, remote_ids: Sequence[str]) -> None:
        self._reachable()
        for remote_id in remote_ids:
            job = self.jobs.get(remote_id)
            if job is None:
                continue
            if job.state == RemoteState.RUNNING:
                self._stop(job, RemoteState.KILLED, None, "cancelled")
            elif job.state == RemoteState.PENDING:
                job.state, job.reason, job.ended = RemoteState.KILLED, "cancelled", self.now
                self.waiting -= 1
                self.changed.add(remote_id)
        self._start_what_fits()

    def tail(self, remote_id: str, stream: str, lines: int) -> str:
        job = self.jobs.get(remote_id)
        return f"simulated failure of job {remote_id}" if job and job.exit_code else ""

    def activity(self) -> object:
        return None

    def close(self) -> None:
        pass
