"""Packing short jobs: several of cigri's jobs in one RM job (CiGri's ``temporal_grouping`` and
``dimensional_grouping``).

A *pack* is one RM job running :data:`WRAPPER`, a POSIX shell script given the pack's jobs as arguments
(each one line of quoted words: job id, job name, command, arguments, quoted as the Slurm adapter quotes
its args lines; nothing in them is expanded). It runs them in ``lanes`` lanes (one for temporal grouping,
one per core of the node for dimensional grouping), each lane one job after the other. Every job gets its
own CIGRI_* variables, its own node file and its own stdout and stderr (``<pack dir>/<job id>.out``,
``.err``); the wrapper writes on its own stdout one status line per job (``start ID TIME``, ``end ID
STATUS TIME``, ``skip ID``), which :class:`Packs` reads through the cluster's transport. A job whose
``<pack dir>/<job id>.skip`` exists when its turn comes is not run (a job cancelled alone in its pack).

A packed job's remote id is ``<RM job id>+<job id>+<jobs in the pack>``. :class:`Packs` wraps an adapter
that offers the file access packing needs (:class:`PackFiles`) and answers the contract for such ids:

- ``states``: the RM job's state and the pack's status lines. A job waiting its turn in a running pack is
  pending; an ended pack's job without an end line was cut short: the one it was running is KILLED as an
  unpacked job killed by its RM would be (resubmitted, counted), the ones it had not started are KILLED
  with ``returned`` (back to the bag, neither a failure nor a resubmission).
- ``cancel``: the RM job, when one of the ids is a job the pack runs at that moment, or the ids cover every
  job of the pack not yet ended (its other unfinished jobs then go back to the bag); otherwise the jobs'
  skip files: a job waiting its turn is skipped and the pack goes on.
- ``hold`` / ``release``: the RM job while it is queued (a pack that has started runs on, as any running
  job does).
- ``tail``: the job's own stdout or stderr.
"""

from __future__ import annotations

import math
import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

from ..errors import AdapterError, JdlError, SubmitError
from ..jdl import parse_resources, resource_slots
from ..model import JobSpec, KillCause, RemoteState, RemoteStatus
from .reading import epoch, whole

SEPARATOR = "+"
PACK_MARGIN = 0.2  # a pack plans at most 80 % of its walltime: durations vary around their mean
MAX_PACK = 1000  # jobs one lane runs at most (a pack's arguments stay far below the kernel's limits)

# The wrapper: $1 the folder of the jobs' outputs, $2 the lanes, $3 the jobs' own CIGRI_RESOURCES, $4 the
# cores of each job (lines of its node file); then one quoted line per job. One line of shell: the Slurm
# adapters carry a job's words on one line. Lanes are subshells of the wrapper's process group, so that
# an RM killing the pack kills them and their jobs too; a killed lane writes no end line for its job.
WRAPPER = (
    'out=$1 lanes=$2 resources=$3 cores=$4; shift 4; umask 077; mkdir -p "$out" || exit 1; '
    "run() { "
    'eval "set -- $1"; id=$1 name=$2; shift 2; '
    'if [ -e "$out/$id.skip" ]; then echo "skip $id"; return; fi; '
    'echo "start $id $(date +%s.%N)"; '
    '( export CIGRI_JOB_ID=$id CIGRI_JOBID=$id CIGRI_JOB_NAME="$name" CIGRI_JOBNAME="$name" '
    'CIGRI_RESOURCES="$resources" CIGRI_NODE_FILE="$out/$id.nodes" CIGRI_NODEFILE="$out/$id.nodes"; '
    'n=0; : > "$out/$id.nodes"; while [ $n -lt "$cores" ]; do hostname >> "$out/$id.nodes"; n=$((n+1)); done; '
    'exec "$@" > "$out/$id.out" 2> "$out/$id.err" < /dev/null ); '
    'echo "end $id $? $(date +%s.%N)"; }; '
    "lane=0; while [ $lane -lt $lanes ]; do "
    '( i=0; for job in "$@"; do [ $((i % lanes)) -eq $lane ] && run "$job"; i=$((i+1)); done ) & '
    "lane=$((lane+1)); done; wait"
)


def pack_size(
    mean: float | None,
    walltime: int,
    *,
    jobs: int,
    slots: int,
    target: int | None = None,
    margin: float = PACK_MARGIN,
    most: int = MAX_PACK,
) -> int:
    """How many jobs one lane of a pack runs in sequence.

    ``mean``: the campaign's mean job duration (None while no job has ended: then 1, each job its own RM
    job, since nothing yet says the jobs are short). The lane's planned time, ``count x mean``, stays
    within the walltime less the margin, and within ``target`` (seconds, the JDL's temporal_grouping
    when a number). ``jobs``: the campaign's jobs still to place, spread over the cluster's ``slots`` as
    guided self-scheduling does (Polychronopoulos and Kuck, 1987: a chunk is the work left over the
    processors): packs shrink as the campaign nears its end, so that its last jobs do not wait in a long
    pack while other slots are idle. At least 1, at most ``most``."""
    if mean is None:
        return 1
    budget = walltime * (1 - margin)
    if target is not None:
        budget = min(budget, target)
    by_time = most if mean <= 0 else int(budget // mean)
    spread = math.ceil(jobs / max(1, slots))
    return max(1, min(by_time, spread, most))


def remote_id(pack: str, job_id: int, size: int) -> str:
    return f"{pack}{SEPARATOR}{job_id}{SEPARATOR}{size}"


def is_packed(remote: str) -> bool:
    return SEPARATOR in remote


def split_id(remote: str) -> tuple[str, int, int]:
    """(RM job id, cigri job id, jobs in the pack) of a packed job's remote id."""
    pack, job, size = remote.rsplit(SEPARATOR, 2)
    return pack, int(job), int(size)


def job_line(spec: JobSpec, home: str) -> str:
    """A job as the wrapper takes it: its id, name, command and arguments, quoted."""
    words = [str(spec.job_id), spec.name, expand(spec.argv[0], home), *spec.argv[1:]]
    return " ".join(shlex.quote(w) for w in words)


def expand(text: str, home: str) -> str:
    from . import expand_home  # the package imports this module

    return expand_home(text, home)


def pack_spec(jobs: Sequence[JobSpec], out_dir: str, lanes: int, node_cores: int | None, home: str) -> JobSpec:
    """The RM job of a pack: the wrapper and its jobs. Dimensional packs (``node_cores``) take one whole
    node; temporal ones the resources of one job."""
    first = jobs[0]
    _, per_job = resource_slots(parse_resources(first.resources, "resources"))
    resources, slots = (f"/nodes=1/core={node_cores}", node_cores) if node_cores else (first.resources, first.slots)
    argv = ("/bin/sh", "-c", WRAPPER, "cigri-pack", out_dir, str(lanes), first.resources, str(per_job))
    return replace(
        first,
        job_id=0,
        name=f"pack-of-{len(jobs)}",
        argv=argv + tuple(job_line(spec, home) for spec in jobs),
        resources=resources,
        slots=slots,
    )


class PackFiles(Protocol):
    """What an adapter offers for packing: files on the cluster, through its transport."""

    def pack_dir(self) -> str:
        """The folder (absolute, on the cluster) of packed jobs' outputs and skip files."""

    def pack_home(self) -> str:
        """The home directory {HOME} and ``~`` stand for on the cluster."""

    def outputs(self, remote_ids: Sequence[str]) -> dict[str, str]:
        """The stdout of each RM job, in one read (an RM job without one yet is left out)."""

    def touch(self, paths: Sequence[str]) -> None:
        """Create these empty files, in one call."""

    def tail_path(self, path: str, lines: int) -> str:
        """The last lines of a file (all of it for 0), empty when it does not exist."""

    def node_cores(self) -> int:
        """Cores of one of the cluster's nodes (the smallest, when they differ)."""


def statuses(text: str) -> dict[int, tuple]:
    """A pack's status lines: job id -> ("start", time) | ("end", status, time, start) | ("skip",). A line
    cut short by the pack's end, or holding what the wrapper never writes (an exit status above 255, a
    time no clock reaches), is left out."""
    out: dict[int, tuple] = {}
    for line in text.splitlines():
        words = line.split()
        job = whole(words[1]) if len(words) > 1 else None
        if job is None:
            continue
        if len(words) == 3 and words[0] == "start" and (began := _moment(words[2])):
            out[job] = ("start", began)
        elif len(words) == 4 and words[0] == "end":
            status, ended = whole(words[2]), _moment(words[3])
            if status is not None and status <= 255 and ended:
                began = out[job][1] if out.get(job, ("",))[0] == "start" else None
                out[job] = ("end", status, ended, began)
        elif len(words) == 2 and words[0] == "skip":
            out[job] = ("skip",)
    return out


def _moment(text: str) -> float | None:
    """A time of ``date +%s.%N``, or None."""
    try:
        return epoch(float(text))
    except ValueError:
        return None


def job_status(remote: str, pack: RemoteStatus, lines: dict[int, tuple]) -> RemoteStatus:
    """A packed job's status from its pack's (see the module's docstring)."""
    _, job_id, _ = split_id(remote)
    if pack.state in (RemoteState.PENDING, RemoteState.UNKNOWN):
        return RemoteStatus(remote, pack.state)
    line = lines.get(job_id)
    over = pack.state in (RemoteState.EXITED, RemoteState.KILLED)
    if line is None:
        if not over:
            return RemoteStatus(remote, RemoteState.PENDING)
        why = f"its pack {pack.remote_id} ended before it started" + (f" ({pack.reason})" if pack.reason else "")
        return RemoteStatus(remote, RemoteState.KILLED, reason=why, returned=True)
    if line[0] == "skip":
        return RemoteStatus(remote, RemoteState.KILLED, reason="cancelled in its pack", returned=True)
    if line[0] == "end" and not _cut_by_kill(pack, line):
        return RemoteStatus(remote, RemoteState.EXITED, line[1], line[3], line[2])
    started = line[1] if line[0] == "start" else line[3]
    if not over:
        return RemoteStatus(remote, RemoteState.RUNNING, started_at=started)
    why = f"its pack {pack.remote_id} ended while it ran" + (f" ({pack.reason})" if pack.reason else "")
    # the pack's walltime is not the job's: a job cut by it did not outgrow its own
    cause = KillCause.OTHER if pack.cause in (None, KillCause.WALLTIME) else pack.cause
    return RemoteStatus(remote, RemoteState.KILLED, started_at=started, ended_at=pack.ended_at, reason=why, cause=cause)


KILL_WINDOW = 5.0  # seconds: a signal death this close to its pack's kill is that kill


def _cut_by_kill(pack: RemoteStatus, line: tuple) -> bool:
    """Did the RM's kill of the pack end this job, although its lane lived to write its end line? The
    signal reaches the job and its lane together, and on a loaded node the lane may still write the job's
    status (128 + the signal) before it dies: a signal death within :data:`KILL_WINDOW` of the pack's kill."""
    _, status, ended, _ = line
    if pack.state != RemoteState.KILLED or status is None or status <= 128:
        return False
    return pack.ended_at is None or ended is None or abs(ended - pack.ended_at) <= KILL_WINDOW


def check(adapter: object, cluster: str, settings: dict, path: str) -> None:
    """Refuse packing on a cluster whose adapter cannot run packs, and dimensional packs of jobs that do
    not fit on one node."""
    wanted = [key for key in ("temporal_grouping", "dimensional_grouping") if settings.get(key)]
    if not wanted:
        return
    if not hasattr(adapter, "pack_dir"):
        raise JdlError(
            f"{path}.{wanted[0]}",
            f"cluster {cluster!r} cannot run packed jobs (packing needs the local, slurm-ssh or slurm-rest adapter"
            " with ssh)",
        )
    if settings.get("dimensional_grouping"):
        nodes, _ = resource_slots(parse_resources(settings["resources"], f"{path}.resources"))
        if nodes > 1:
            raise JdlError(f"{path}.dimensional_grouping", "packs jobs of one node each: resources asks for more")


class Packs:
    """An adapter seen with its packed jobs (remote ids holding ``+``); other ids go to it unchanged."""

    def __init__(self, inner):
        object.__setattr__(self, "inner", inner)

    def __getattr__(self, attribute: str):
        return getattr(self.inner, attribute)

    def __setattr__(self, attribute: str, value) -> None:
        setattr(self.inner, attribute, value)

    def check(self, settings: dict, path: str) -> None:
        self.inner.check(settings, path)
        check(self.inner, self.inner.name, settings, path)

    def submit_packs(
        self, batch_key: str, packs: Sequence[Sequence[JobSpec]], lanes: int, node_cores: int | None, look: bool
    ) -> list[str]:
        """Submit packs as one batch (one RM job each; whole nodes of ``node_cores`` cores for dimensional
        packs); return each job's remote id, in the order of the packs' jobs. ``look``: the batch may be on
        the cluster already (an earlier pass was killed): its RM jobs are found by their key."""
        home, out_dir, cores = self.inner.pack_home(), self.inner.pack_dir(), node_cores
        specs = [pack_spec(jobs, out_dir, lanes, cores, home) for jobs in packs]
        if any("\n" in w or "\r" in w for spec in specs for w in spec.argv[8:]):
            raise SubmitError("a job's words hold a line break, which a pack cannot carry")
        rm_ids = (self.inner.find_batch(batch_key) if look else None) or self.inner.submit(batch_key, specs)
        return self.job_ids(rm_ids, packs)

    @staticmethod
    def job_ids(rm_ids: Sequence[str], packs: Sequence[Sequence[JobSpec]]) -> list[str]:
        return [remote_id(rm, spec.job_id, len(jobs)) for rm, jobs in zip(rm_ids, packs, strict=True) for spec in jobs]

    def _split(self, remote_ids: Sequence[str]) -> tuple[list[str], dict[str, list[str]]]:
        plain, packed = [], defaultdict(list)
        for remote in remote_ids:
            if is_packed(remote):
                packed[split_id(remote)[0]].append(remote)
            else:
                plain.append(remote)
        return plain, packed

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        plain, packed = self._split(remote_ids)
        if not packed:
            return self.inner.states(plain)
        found = self.inner.states(plain + list(packed))
        out = {rid: found[rid] for rid in plain}
        started = [rm for rm in packed if found[rm].state not in (RemoteState.PENDING, RemoteState.UNKNOWN)]
        texts = self.inner.outputs(started) if started else {}
        for rm, members in packed.items():
            lines = statuses(texts.get(rm, ""))
            for remote in members:
                out[remote] = job_status(remote, found[rm], lines)
        return out

    def cancel(self, remote_ids: Sequence[str]) -> None:
        plain, packed = self._split(remote_ids)
        whole, skips = list(plain), []
        if packed:
            texts = self.inner.outputs(list(packed))
            for rm, members in packed.items():
                lines = statuses(texts.get(rm, ""))
                ended = {job for job, line in lines.items() if line[0] in ("end", "skip")}
                running = {job for job, line in lines.items() if line[0] == "start"}
                asked = {split_id(remote)[1] for remote in members}
                if asked & running or len(asked | ended) >= split_id(members[0])[2]:
                    whole.append(rm)
                else:
                    skips += [f"{self.inner.pack_dir()}/{job}.skip" for job in sorted(asked - ended)]
        if skips:
            self.inner.touch(skips)
        if whole:
            self.inner.cancel(whole)

    def hold(self, remote_ids: Sequence[str]) -> None:
        self.inner.hold(self._queued(remote_ids))

    def release(self, remote_ids: Sequence[str]) -> None:
        self.inner.release(self._queued(remote_ids))

    def _queued(self, remote_ids: Sequence[str]) -> list[str]:
        """The plain ids, and the RM jobs of the packed ones that are still queued (a pack that runs
        already is not the RM's to hold: a job waiting in it is, to cigri, only queued)."""
        plain, packed = self._split(remote_ids)
        if not packed:
            return plain
        found = self.inner.states(list(packed))
        return plain + [rm for rm in packed if found[rm].state == RemoteState.PENDING]

    def tail(self, remote: str, stream: str, lines: int) -> str:
        if not is_packed(remote):
            return self.inner.tail(remote, stream, lines)
        job = split_id(remote)[1]
        return self.inner.tail_path(f"{self.inner.pack_dir()}/{job}.{'out' if stream == 'stdout' else 'err'}", lines)


# reads RM jobs' stdout files in one command: each present file after a line "@@ <path>"
_READ = 'for f in "$@"; do if [ -f "$f" ]; then printf \'\\n@@ %s\\n\' "$f"; cat "$f"; fi; done'


class RemotePackFiles:
    """:class:`PackFiles` through a command runner (ssh, or local on a login node). The adapter gives
    ``_pack_run(argv)`` (a :class:`~cigri.adapters.transport.Result`), ``_pack_stdout(remote_id)`` (the path
    of an RM job's stdout) and ``home``."""

    def pack_home(self) -> str:
        return self.home

    def outputs(self, remote_ids: Sequence[str]) -> dict[str, str]:
        paths = {self._pack_stdout(rid): rid for rid in remote_ids}
        result = self._pack_run(["sh", "-c", _READ, "sh", *paths])
        if not result.ok:
            raise AdapterError(f"{self.name}: cannot read the packs' status: {result.describe()}")
        out: dict[str, list[str]] = {}
        current = None
        for line in result.stdout.splitlines():
            if line.startswith("@@ ") and line[3:] in paths:
                current = paths[line[3:]]
                out[current] = []
            elif current is not None:
                out[current].append(line)
        return {rid: "\n".join(lines) for rid, lines in out.items()}

    def touch(self, paths: Sequence[str]) -> None:
        script = 'umask 077; for f; do mkdir -p "${f%/*}" && : > "$f" || exit 1; done'
        result = self._pack_run(["sh", "-c", script, "sh", *paths])
        if not result.ok:
            raise AdapterError(f"{self.name}: cannot mark jobs to skip: {result.describe()}")

    def tail_path(self, path: str, lines: int) -> str:
        result = self._pack_run(["tail", "-n", str(lines), path] if lines else ["cat", path])
        return result.stdout.rstrip("\n") if result.ok else ""
