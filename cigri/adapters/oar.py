"""OAR: what ``oar-rest`` and ``oar-ssh`` share: the state and event table, the resource request, the
array job built from a batch's specs, and the reading of OAR's job records.

A batch is ONE OAR array job named after the batch key (CiGri's ``cigri.<...>`` names). Its command is
the exec_file; its param file holds one line per spec: the spec's words after the exec_file, each quoted
(``shlex.quote``) so that the shell OAR runs ``command + " " + line`` in splits them back into exactly
those words. OAR refuses an array of one param line, so a batch of one spec is a plain job whose command
carries the quoted words itself (which also lets a prologue's multi-line script through). The jobs' JDL
environment is not in the command, which every user sees (``oarstat``, ``ps``): the adapters stage it in a
file (0600, ``<batch key>.env`` in cigri's folder on the cluster) that the command sources.

Remote ids are OAR job ids, mapped to specs by their ``array_index`` (spec *i* is index *i*): never by
matching param text, which CiGri does and gets wrong when one param prefixes another (``a``/``a1``).

States (:func:`translate`): Waiting, Hold, toError, toAckReservation are PENDING; toLaunch, Launching
(OAR gave the job its cores and starts it: an ``oardel`` then races with the start, and the real OAR 2.5.9
ran such jobs to their end: they are no queued jobs to take back), Running, Finishing, Suspended, Resuming
are RUNNING; Terminated is EXITED with the exit status read from OAR's wait status;
Error depends on the job's events:

- BESTEFFORT_KILL, WALLTIME, EXTERMINATE*, FRAG_JOB_REQUEST: KILLED (cigri resubmits the job), the cause
  (:func:`kill_cause`) given by the first of BESTEFFORT_KILL (preempted), WALLTIME, EXTERMINATE* (admin), else
  FRAG_JOB_REQUEST (oardel: admin). OAR 2.5.9 records FRAG_JOB_REQUEST with every kill, before WALLTIME and
  after BESTEFFORT_KILL: it says a kill was asked for, not why;
- RESUBMIT_JOB_AUTOMATICALLY: OAR resubmitted the job itself under a new id. The adapters follow it:
  the old id keeps being the job's remote id in cigri, and is reported with the state of the newest job
  of the chain (PENDING, RUNNING, EXITED...), found by one more bulk query per hop, only when there are
  such jobs (see :func:`statuses`); cancel and tail act on the newest job too, and the reason says
  "resubmitted by OAR as job N";
- WORKING_DIRECTORY: EXITED without exit status, with the reason "working directory ..." (an event the
  user sees and fixes); OUTPUT_FILES (OAR could not create the job's stdout and stderr files in its folder)
  likewise, with the reason "output files ...";
- any other Error: EXITED with OAR's exit status when it is not 0, else without one and the events as
  the reason (an event for the user, never a success).

A state without a translation is UNKNOWN.
"""

from __future__ import annotations

import re
import shlex
import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import JdlError, SubmitError
from ..jdl import format_walltime, parse_resources
from ..model import JobSpec, KillCause, RemoteState, RemoteStatus
from . import Option, batch_environment, expand_home, exports
from .reading import epoch, whole

STATES: dict[str, RemoteState] = {
    "Waiting": RemoteState.PENDING,
    "Hold": RemoteState.PENDING,
    "toLaunch": RemoteState.RUNNING,  # its cores given: being started (see the module's docstring)
    "toError": RemoteState.PENDING,  # on its way to Error: its events are not final yet
    "toAckReservation": RemoteState.PENDING,
    "Launching": RemoteState.RUNNING,
    "Running": RemoteState.RUNNING,
    "Finishing": RemoteState.RUNNING,
    "Suspended": RemoteState.RUNNING,
    "Resuming": RemoteState.RUNNING,
    "Terminated": RemoteState.EXITED,
    "Error": RemoteState.EXITED,  # refined by the job's events, see translate()
}
# the OAR events after which the job was ended by OAR itself (cigri runs it again), and why OAR killed it, from
# its kill events (EXTERMINATE_JOB and the like by their prefix), in this order of
# precedence: FRAG_JOB_REQUEST comes with every kill, alone only when the job was deleted (oardel)
CAUSES: dict[str, KillCause] = {
    "BESTEFFORT_KILL": KillCause.PREEMPTED,
    "WALLTIME": KillCause.WALLTIME,
    "EXTERMINATE": KillCause.ADMIN,  # oardel --force, or an administrator's
    "FRAG_JOB_REQUEST": KillCause.ADMIN,  # oardel
}
RESUBMIT_EVENT = "RESUBMIT_JOB_AUTOMATICALLY"
WORKDIR_EVENT = "WORKING_DIRECTORY"
OUTPUT_EVENT = "OUTPUT_FILES"  # OAR 2.5.9: "Cannot create .stdout and .stderr files in <folder> on the node <n>"
# the states of the jobs OAR lists when asked for all of them (the default lists only current jobs)
ALL_STATES = tuple(STATES)
FOLLOW_HOPS = 5  # resubmissions of resubmissions followed at most
_INTEGER = re.compile(r"[0-9]{1,18}")


@dataclass(frozen=True)
class OarJob:
    """One job as OAR lists it (REST item or ``oarstat -J`` record), with the keys of both."""

    id: str
    array_id: str
    array_index: int | None  # None where the record leaves it out (OAR 2.5's API lists it null)
    name: str
    state: str
    raw_exit: int | None
    started: float | None
    ended: float | None
    events: tuple[tuple[str, str], ...]  # (type, description)
    has_events: bool  # did the record carry its events at all
    owner: str
    directory: str
    stdout_file: str
    stderr_file: str
    slots: int

    @property
    def event_types(self) -> tuple[str, ...]:
        return tuple(kind for kind, _ in self.events)


def _pick(item: dict, *keys: str) -> object:
    for key in keys:
        if item.get(key) not in (None, ""):
            return item[key]
    return None


def _int(value: object) -> int | None:
    """A whole number, given as one or as its ASCII digits (a sign allowed); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        number = whole(text.removeprefix("-"))
        return -number if number is not None and text.startswith("-") else number
    return None


def _time(value: object) -> float | None:
    """An epoch (OAR's API) or a date (oarstat's ``YYYY-MM-DD HH:MM:SS``); 0 means "not yet"."""
    number = _int(value)
    return epoch(number if number is not None else value)


def _events(value: object) -> tuple[tuple[str, str], ...]:
    out = []
    for event in value if isinstance(value, list) else []:
        if isinstance(event, dict):
            out.append((str(event.get("type") or ""), str(event.get("description") or "")))
        elif isinstance(event, str):
            out.append((event, ""))
    return tuple(out)


def job_of(item: dict, key: str | None = None) -> OarJob | None:
    """An :class:`OarJob` from a REST item or an ``oarstat -J`` record (``key``: its id there)."""
    job_id = _int(_pick(item, "id", "Job_Id", "job_id")) or _int(key)
    if job_id is None:
        return None
    resources = _pick(item, "resources", "assigned_resources")
    slots = len(resources) if isinstance(resources, list) else 1
    return OarJob(
        id=str(job_id),
        array_id=str(_int(_pick(item, "array_id", "arrayId")) or job_id),
        array_index=_int(_pick(item, "array_index", "arrayIndex")),
        name=str(_pick(item, "name", "job_name") or ""),
        state=str(_pick(item, "state") or ""),
        raw_exit=_int(_pick(item, "exit_code", "exitCode")),
        started=_time(_pick(item, "start_time", "startTime")),
        ended=_time(_pick(item, "stop_time", "stopTime")),
        events=_events(item.get("events")),
        has_events="events" in item,
        owner=str(_pick(item, "owner", "user") or ""),
        directory=str(_pick(item, "launching_directory", "launchingDirectory", "directory") or ""),
        stdout_file=str(_pick(item, "stdout_file", "stdout") or ""),
        stderr_file=str(_pick(item, "stderr_file", "stderr") or ""),
        slots=max(1, slots),
    )


# the state a hold or a resumption takes a job out of: oarhold holds only Waiting jobs, oarresume resumes
# only jobs in Hold (OAR's documentation); any other state is no longer cigri's to change
MOVED_FROM = {"hold": "Waiting", "resume": "Hold"}


def still_unmoved(failed: dict[str, str], jobs: dict[str, OarJob], verb: str) -> list[str]:
    """Of the jobs OAR refused to hold or resume (id -> its words), those still in the state the request
    takes a job out of, as "id: words": real failures. A job that started, ended or left meanwhile is none."""
    unmoved = MOVED_FROM[verb]
    return [
        f"{job_id}: {words}" for job_id, words in failed.items() if (job := jobs.get(job_id)) and job.state == unmoved
    ]


def cigri_job(job: OarJob) -> bool:
    """Is this one of cigri's jobs (named after a batch key)?"""
    return job.name.startswith("cigri.")


def exit_status(raw: int | None) -> int | None:
    """OAR's exit_code (a wait status, 256 for ``exit 1``) as a shell would report it."""
    if raw is None or raw < 0 or raw > 0xFFFF:
        return None
    signal = raw & 0x7F
    return 128 + signal if signal else raw >> 8


def resubmitted_as(job: OarJob) -> str | None:
    """The id of the job OAR resubmitted ``job`` as: the number in its RESUBMIT_JOB_AUTOMATICALLY
    event's description that is not the job's own id (OAR writes "... resubmitted ... job N")."""
    for kind, description in job.events:
        if kind == RESUBMIT_EVENT:
            numbers = [n for n in _INTEGER.findall(description) if n != job.id]
            if numbers:
                return numbers[-1]
    return None


def translate(job: OarJob) -> tuple[RemoteState, int | None, str]:
    """(RemoteState, exit code, reason) of a job; see the module's docstring for the table."""
    remote = STATES.get(job.state, RemoteState.UNKNOWN)
    if job.state == "Terminated":
        code = exit_status(job.raw_exit)
        return remote, code, "" if code is not None else "terminated without an exit status"
    if job.state != "Error":
        return remote, None, ""
    kinds = job.event_types
    if (event := kill_event(job)) is not None:
        return RemoteState.KILLED, None, f"killed by OAR ({event})"
    for kind, description in job.events:
        if kind.startswith(WORKDIR_EVENT):
            return RemoteState.EXITED, None, f"working directory problem: {description or kind}"
        if kind.startswith(OUTPUT_EVENT):
            return RemoteState.EXITED, None, f"output files problem: {description or kind}"
    code = exit_status(job.raw_exit)
    if code:
        return RemoteState.EXITED, code, ""
    return RemoteState.EXITED, None, f"OAR error ({', '.join(kinds) or 'no event recorded'})"


def kill_event(job: OarJob) -> str | None:
    """The event that says why OAR killed the job, by the precedence of :data:`CAUSES`; None when it was not
    killed."""
    for word in CAUSES:
        event = next((kind for kind in job.event_types if kind.startswith(word)), None)
        if event is not None:
            return event
    return None


def kill_cause(job: OarJob) -> KillCause | None:
    """Why OAR killed the job (see :data:`CAUSES`); None when OAR did not kill it (it is not in Error, or no
    kill event is recorded)."""
    if job.state != "Error":
        return None
    event = kill_event(job)
    if event is None:
        return None
    return next(cause for word, cause in CAUSES.items() if event.startswith(word))


def checkpoint_request(spec: JobSpec) -> tuple[int, int] | None:
    """(seconds before the walltime, signal number) of oarsub's ``--checkpoint`` and ``--signal`` for a job
    that checkpoints by signal (OAR sends it to the job's processes), None for the others."""
    if not spec.checkpoint_signal:
        return None
    return spec.checkpoint_grace, int(signal.Signals[f"SIG{spec.checkpoint_signal}"])


def statuses(
    remote_ids: Sequence[str], fetch: Callable[[Sequence[str]], dict[str, OarJob]]
) -> tuple[dict[str, RemoteStatus], dict[str, str]]:
    """Every job's status from ``fetch`` (one bulk query of job records by id), following the jobs OAR
    resubmitted by itself (one more bulk query per hop, only when there are some); also returns which
    remote id was followed to which job, for cancel and tail."""
    current = {rid: job for rid, job in zip(remote_ids, map(fetch(remote_ids).get, remote_ids), strict=True)}
    followed: dict[str, str] = {}
    for _ in range(FOLLOW_HOPS):
        wanted = {rid: new for rid, job in current.items() if job and (new := resubmitted_as(job))}
        if not wanted:
            break
        found = fetch(list(wanted.values()))
        for rid, new in wanted.items():
            current[rid], followed[rid] = found.get(new), new
    out = {}
    for rid, job in current.items():
        if job is None:
            out[rid] = RemoteStatus(rid, RemoteState.UNKNOWN, reason="not listed by OAR")
            continue
        remote, code, why = translate(job)
        if rid in followed:
            why = f"resubmitted by OAR as job {followed[rid]}" + (f"; {why}" if why else "")
        ended = remote in (RemoteState.EXITED, RemoteState.KILLED)
        cause = kill_cause(job)
        out[rid] = RemoteStatus(rid, remote, code, job.started, job.ended if ended else None, why, cause=cause)
    return out, followed


def tally(jobs: Iterable[OarJob], ours: Callable[[OarJob], bool]) -> tuple[int, int, int]:
    """(busy slots, of which cigri's, cigri's jobs queued) of current jobs (a job being launched holds its
    cores already: it is RUNNING)."""
    busy = grid_used = queued = 0
    for job in jobs:
        if translate(job)[0] == RemoteState.RUNNING:
            busy += job.slots
            grid_used += job.slots if ours(job) else 0
        elif translate(job)[0] == RemoteState.PENDING and ours(job):
            queued += 1
    return busy, grid_used, queued


def walltime_request(spec: JobSpec) -> str:
    """The ``-l`` / ``resource`` value: the campaign's OAR resources with the walltime appended."""
    return f"{spec.resources.strip()},walltime={format_walltime(spec.walltime)}"


def check_settings(settings: dict, path: str) -> None:
    """Resources must parse (OAR takes them as they are); properties are OAR's own SQL filter."""
    parse_resources(settings["resources"], f"{path}.resources")
    properties = settings.get("properties") or ""
    if "\n" in properties or "\r" in properties:
        raise JdlError(f"{path}.properties", "a line break cannot be passed to OAR")


def shell_path(text: str, home: str) -> str:
    """A path as one shell word: ``{HOME}`` and a leading ``~`` become ``home``. With home ``$HOME``
    (REST, where cigri does not know it) it stays ``"$HOME"``, outside the quotes, for the job's shell to
    expand (oar-rest escapes it from the shell OAR 2.5's API runs oarsub in: see ``oar_rest.oarapi_word``)."""
    if home != "$HOME":
        return shlex.quote(expand_home(text, home))
    parts = expand_home(text, "\0").split("\0")
    return '"$HOME"'.join(shlex.quote(part) if part else "" for part in parts)


def param_line(spec: JobSpec) -> str:
    """The job's id, its name and its words after the exec_file, quoted for the shell OAR appends them to
    the command in (the command's wrapper takes the id and the name off)."""
    words = [str(spec.job_id), spec.name, *spec.argv[1:]]
    if any("\n" in word or "\r" in word for word in words):
        raise SubmitError(f"job {spec.job_id}: a word holds a line break, which an OAR param file cannot carry")
    return " ".join(shlex.quote(word) for word in words)


def user_environment(spec: JobSpec) -> dict[str, str]:
    """The JDL's ``environment`` map of a job, without cigri's own CIGRI_* variables: what may hold secrets."""
    return {name: value for name, value in spec.env.items() if not name.startswith("CIGRI_")}


def environment_file(spec: JobSpec) -> str | None:
    """The text of a batch's environment file (the jobs' JDL map, exported), None when the map is empty. A
    job's command line is shown to every user (``oarstat``, ``ps`` on its nodes): its environment goes in a
    file on the cluster (0600) that the command sources."""
    environment = user_environment(spec)
    return exports(environment) + "\n" if environment else None


def job_wrapper(spec: JobSpec, env_file: str | None = None) -> str:
    """The start of every command of a batch: ``sh -c`` of a script that sources the batch's environment file
    (``env_file``, a shell word; a job without it does not start) and exports the job's CIGRI_* variables,
    then execs the exec_file (its $1) with the job's words, after taking off the job's id and name ($2,
    $3). OAR gives the job its folder and $OAR_NODEFILE."""
    shared = {
        k: v
        for k, v in batch_environment(spec, "").items()
        if k not in user_environment(spec) and k not in ("CIGRI_WORKDIR", "CIGRI_WORKING_DIRECTORY")
    }
    source = [f'[ -r {env_file} ] || {{ echo "cigri: cannot read" {env_file} >&2; exit 1; }}', f". {env_file}"]
    script = "; ".join(  # one line: OAR stores and runs the command as one
        [
            *(source if env_file else []),
            exports(shared).replace("\n", "; "),
            'export CIGRI_WORKDIR="$PWD" CIGRI_WORKING_DIRECTORY="$PWD"',
            'export CIGRI_NODE_FILE="$OAR_NODEFILE" CIGRI_NODEFILE="$OAR_NODEFILE"',
            'export CIGRI_JOB_ID="$2" CIGRI_JOBID="$2" CIGRI_JOB_NAME="$3" CIGRI_JOBNAME="$3"',
            "program=$1",
            "shift 3",
            'exec "$program" "$@"',
        ]
    )
    return f"sh -c {shlex.quote(script)} cigri-job"


def array_command(specs: Sequence[JobSpec], home: str, env_file: str | None = None) -> tuple[str, str | None]:
    """(command, param file) of a batch: an array job, or a plain job for a batch of one (OAR refuses
    a one-line param file). ``env_file``: the batch's environment file, as a shell word (see :func:`job_wrapper`)."""
    command = f"{job_wrapper(specs[0], env_file)} {shell_path(specs[0].argv[0], home)}"
    if len(specs) == 1:
        spec = specs[0]
        words = [str(spec.job_id), spec.name, *spec.argv[1:]]
        return " ".join([command, *(shlex.quote(word) for word in words)]), None
    return command, "\n".join(param_line(spec) for spec in specs) + "\n"


def index_of(job: OarJob) -> int:
    """A job's index in its array. OAR 2.5's API lists ``array_index`` as null (``GET jobs/details``): there
    the index comes from the ids, OAR 2.5 giving an array's jobs consecutive ids in index order, the first
    being the array's id (an array submission is atomic: OAR::IO::add_micheline_job). A plain job is index 1."""
    if job.array_index is not None:
        return job.array_index
    return int(job.id) - int(job.array_id) + 1


def ids_by_index(jobs: Iterable[OarJob], array_id: str, count: int) -> list[str] | None:
    """The ids of array ``array_id``'s jobs, in array-index order 1..count; None if one is missing."""
    by_index = {index_of(job): job.id for job in jobs if job.array_id == array_id}
    if any(index not in by_index for index in range(1, count + 1)):
        return None
    return [by_index[index] for index in range(1, count + 1)]


def output_path(job: OarJob, stream: str) -> str | None:
    """The path of a job's stdout or stderr file (OAR keeps ``%jobid%`` patterns in some versions)."""
    name = job.stdout_file if stream == "stdout" else job.stderr_file
    name = name.replace("%jobid%", job.id).replace("%jobname%", job.name)
    if not name:
        return None
    if name.startswith(("/", "~")):
        return name
    return f"{job.directory.rstrip('/')}/{name}" if job.directory else None


def capacity_of_resources(resources: Iterable[dict]) -> tuple[int, int, int]:
    """(total, used, down) slots of OAR's resource records: Alive ones count, busy when they hold jobs; the
    others (Suspected, Absent, Dead) are down."""
    total = used = down = 0
    for resource in resources:
        if str(resource.get("state") or "") != "Alive":
            down += 1
            continue
        total += 1
        if resource.get("jobs") or resource.get("running_jobs"):
            used += 1
    return total, used, down


OAR_OPTIONS = (
    Option("queue_depth", int, "jobs cigri may queue beyond the free slots (default 100)", minimum=0),
    Option(
        "max_batch",
        int,
        "jobs per OAR array job at most (lower it when the cluster refuses large submissions; default 1000)",
        minimum=1,
    ),
    Option("timeout", int, "seconds to wait for one answer of the cluster (default 20)", minimum=1),
)
