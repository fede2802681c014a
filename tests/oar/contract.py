"""The state and behaviour of a contract OAR cluster, kept in one JSON file.

The HTTP server (in the test process) and the fake ``oarsub``/``oarstat``/``oardel`` (other processes, maybe run
by the user cigritest over ssh) share the file: every operation takes an exclusive ``flock`` on ``<file>.lock``,
reads the file, changes it and writes it back in place, so the folder needs no write access, only the two files.

Time is injected: the state stores its own clock, moved only by ``advance(seconds)``. Jobs are scheduled only
by ``advance`` (``advance(0)`` is a scheduling pass), first in first out, best-effort jobs after normal ones.

A job's arguments, the shell words after the executable of its command (to which OAR appends the job's line of an
array parameter file), ``NAME [DURATION [EXIT]]``, say how it behaves: it runs DURATION seconds (default 1) and
exits with EXIT (default 0). Facts from OAR's documentation and from CiGri's use of it (see fixtures/README.md):

- states: Waiting -> Launching -> Running -> Terminated, or Error when OAR killed the job; ``oarhold`` puts a
  Waiting job in Hold (not scheduled) and ``oarresume`` a job in Hold back to Waiting; each refuses a job in any
  other state;
- a job that ran to its end is ``Terminated`` whatever its exit status; ``exit_code`` is the wait(2) status of
  its command (exit 1 -> 256): CiGri reads ``exit_code >> 8`` of Terminated jobs;
- a job killed for a normal job's cores is ``Error`` with event ``BESTEFFORT_KILL``; past its walltime,
  ``Error`` with ``WALLTIME``; deleted by ``oardel`` or the API, ``Error`` with ``FRAG_JOB_REQUEST`` (which the
  real 2.5.9 also records after BESTEFFORT_KILL and before WALLTIME, then SEND_KILL_JOB and
  SWITCH_INTO_ERROR_STATE for a running job: see ``_kill``); a missing
  working directory, ``Error`` with ``WORKING_DIRECTORY``; resubmitted by OAR, ``Error`` with
  ``RESUBMIT_JOB_AUTOMATICALLY`` whose description holds ``(new id = N)``. Killed jobs keep ``exit_code`` null;
- without a walltime, a job gets OAR's default of 2 hours (``walltime: 7200`` in the documented examples);
- stdout and stderr are ``OAR.<id>.stdout`` / ``OAR.<id>.stderr`` (``OAR.<name>.<id>.stdout`` for a named job,
  as the real 2.5.9 writes them) in the launching directory, which is the
  owner's home when the job names none. The contract's users' homes are ``homes/<user>`` beside its state file
  (written only when that folder exists), never the machine's real homes: tests leave nothing in them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

WAITING = "Waiting"
HOLD = "Hold"
LAUNCHING = "Launching"
RUNNING = "Running"
TERMINATED = "Terminated"
ERROR = "Error"
FINAL_STATES = frozenset({TERMINATED, ERROR})
HOLDING_CORES = frozenset({LAUNCHING, RUNNING})

DEFAULT_WALLTIME = 7200
DEFAULT_DURATION = 1.0
DEFAULT_RESOURCES = "/resource_id=1"
EPOCH = 1_700_000_000


class OarError(Exception):
    """A request the contract OAR refuses; ``status`` is the HTTP status the API answers with."""

    status = 400


class JobNotFound(OarError):
    status = 404


class FileExists(OarError):
    """An upload without ``force`` onto an existing file."""

    status = 403


class ResourcesUnavailable(OarError):
    """More cores asked than the cluster has: OAR's admission refuses the job."""


def parse_walltime(text: str) -> int:
    """OAR's walltime formats ``hour:mn:sec``, ``hour:mn`` and ``hour`` (oarsub(1)), in seconds."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(p.strip().isdigit() for p in parts):
        raise OarError(f"bad walltime {text!r}")
    seconds = 0
    for unit, part in zip((3600, 60, 1), parts, strict=False):
        seconds += unit * int(part)
    return seconds


def parse_resources(request: str | list[str] | None) -> tuple[int, int]:
    """(cores, walltime seconds) of a ``-l`` request such as ``/nodes=1/core=2,walltime=00:10:00``.

    The cores are the product of the counts of the hierarchy (``nodes=2/core=4`` -> 8); ``{...}`` SQL filters
    are ignored."""
    if isinstance(request, list):
        request = ",".join(request)
    request = (request or DEFAULT_RESOURCES).strip()
    walltime = DEFAULT_WALLTIME
    cores = 1
    for part in request.split(","):
        part = re.sub(r"\{[^}]*\}", "", part).strip()
        if not part:
            continue
        if part.startswith("walltime="):
            walltime = parse_walltime(part.removeprefix("walltime="))
            continue
        for level in filter(None, part.split("/")):
            count = level.partition("=")[2]
            if not count.strip().isdigit():
                raise OarError(f"bad resource request {level!r} in {request!r}")
            cores *= int(count)
    return cores, walltime


def shell_words(text: str) -> list[str]:
    """The words the shell OAR runs a job in would see (plain blanks when the quoting is broken)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def unwrapped(words: list[str]) -> list[str]:
    """The program and arguments a job's shell ends up running: cigri's wrapper
    ``sh -c SCRIPT cigri-job PROGRAM ID NAME ARGS...`` execs PROGRAM with ARGS (see cigri.adapters.oar)."""
    if words[:2] == ["sh", "-c"] and len(words) >= 7 and words[3] == "cigri-job":
        return [words[4], *words[7:]]
    return words


def parse_param_line(line: str) -> tuple[str, float, int]:
    """(name, duration, exit status) of the arguments ``NAME [DURATION [EXIT]]`` of a job."""
    words = shell_words(line)
    name = words[0] if words else ""
    duration = DEFAULT_DURATION
    exit_status = 0
    with contextlib.suppress(IndexError, ValueError):
        duration = float(words[1])
        exit_status = int(words[2])
    return name, duration, exit_status


def param_lines(text: str) -> list[str]:
    """The jobs of an array parameter file: one per line, blank lines and ``#`` comments skipped."""
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _share(path: Path) -> None:
    """Let the other user (cigritest, over ssh) read and write a file we created."""
    with contextlib.suppress(PermissionError):
        path.chmod(0o666)


class OarState:
    """An OAR cluster of ``cores`` cores (spread over ``nodes`` nodes) in the JSON file ``path``.

    Opening an existing file keeps its state: ``cores``, ``nodes``, ``properties`` and ``launch_delay`` (seconds
    a job stays Launching) only shape a new cluster."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        cores: int = 8,
        nodes: int = 1,
        properties: dict[str, str] | None = None,
        launch_delay: float = 1.0,
    ):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if not self.path.exists() or self.path.stat().st_size == 0:
                data = _new_cluster(cores, nodes, properties or {}, launch_delay)
                data["homes"] = str(self.path.parent / "homes")
                self._write(data)
                _share(self.path)

    def home(self, user: str) -> str:
        """``user``'s home on the contract cluster: the launching directory of jobs that name none."""
        with self._locked():
            return f"{self._read()['homes']}/{user}"

    # -- file access -------------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        created = not self.lock_path.exists()
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            if created:
                _share(self.lock_path)
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self) -> dict:
        return json.loads(self.path.read_text())

    def _write(self, data: dict) -> None:
        with open(self.path, "w") as file:
            json.dump(data, file)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[dict]:
        with self._locked():
            data = self._read()
            yield data
            self._write(data)

    def snapshot(self) -> dict:
        """The whole state, read once under the lock."""
        with self._locked():
            return self._read()

    # -- queries -----------------------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.snapshot()["now"]

    def jobs(self) -> list[dict]:
        """Every job, by id: id, array_id, array_index, state, exit_code, events, name, types, command, params..."""
        return [public_job(job) for job in self.snapshot()["jobs"]]

    def job(self, job_id: int) -> dict:
        return public_job(_find(self.snapshot(), job_id))

    def resources(self) -> list[dict]:
        return self.snapshot()["resources"]

    def read_file(self, path: str) -> str:
        """A job's stdout or stderr file, by its full path (launching directory + ``OAR.<id>.std...``), or a file
        uploaded through the API."""
        data = self.snapshot()
        files = {**data.get("media", {}).get("files", {}), **data["files"]}
        if path not in files:
            raise JobNotFound(f"File not found: {path}")
        return files[path]

    def upload(self, path: str, content: str, *, force: bool, make_folders: bool) -> None:
        """A file written as the user through the API (``POST media``): created with the mode a umask of 022 gives
        (644), an existing one truncated and written keeping its mode. ``make_folders``: OAR 2.5 makes the
        missing folders; OAR 3 does not, and a file whose folder is missing is silently not written (its API
        starts ``cat > path`` and answers without waiting for it). The state keeps the file, its mode and every
        write (path, mode then, size); a path in the contract's folder is also written there."""
        folder = Path(path).parent
        with self._transaction() as data:
            media = data.setdefault("media", {"files": {}, "modes": {}, "writes": []})
            if path in media["files"] and not force:
                raise FileExists(f"The file already exists: {path}")
            if not make_folders and not folder.is_dir():
                return
            media["modes"].setdefault(path, "644")
            media["files"][path] = content
            media["writes"].append((path, media["modes"][path], len(content)))
            if self._holds(folder):
                folder.mkdir(parents=True, exist_ok=True)
                Path(path).touch(mode=0o644)
                Path(path).write_text(content)

    def chmod(self, path: str, mode: str) -> None:
        """``POST media/chmod``: the mode (octal digits) of a file uploaded before."""
        with self._transaction() as data:
            media = data.get("media", {})
            if path not in media.get("files", {}):
                raise JobNotFound(f"File not found: {path}")
            media["modes"][path] = mode
            if self._holds(Path(path).parent):
                Path(path).chmod(int(mode, 8))

    def _holds(self, folder: Path) -> bool:
        """Is ``folder`` inside the contract's own folder (the only place it writes files)?"""
        return folder.resolve().is_relative_to(self.path.parent.resolve())

    # -- actions -----------------------------------------------------------------------------------------------
    def submit(
        self,
        owner: str,
        command: str,
        resources: str | list[str] | None = None,
        params: list[str] | None = None,
        types: list[str] | tuple[str, ...] = (),
        name: str | None = None,
        directory: str | None = None,
        properties: str | None = None,
        project: str | None = None,
        initial_request: str = "",
    ) -> list[int]:
        """Submit one job, or an array job of one job per parameter line; the ids, the first being the array id."""
        cores, walltime = parse_resources(resources)
        if params is not None and not params:
            raise OarError("the parameter file has no job")
        with self._transaction() as data:
            if cores > len(data["resources"]):
                raise ResourcesUnavailable(
                    f"There are not enough resources for your request ({cores} cores, {len(data['resources'])} exist)"
                )
            first = data["next_id"]
            lines = params if params is not None else [None]
            for index, line in enumerate(lines, start=1):
                job = _new_job(
                    data,
                    owner=owner,
                    command=command,
                    params=line,
                    cores=cores,
                    walltime=walltime,
                    types=list(types),
                    name=name,
                    directory=directory,
                    properties=properties,
                    project=project,
                    initial_request=initial_request,
                    wanted=resources if isinstance(resources, str) else ",".join(resources or [DEFAULT_RESOURCES]),
                )
                job["array_id"] = first
                job["array_index"] = index
                data["jobs"].append(job)
            return list(range(first, data["next_id"]))

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward, starting and ending jobs on the way (0: a scheduling pass)."""
        if seconds < 0:
            raise ValueError("the clock never goes back")
        with self._transaction() as data:
            target = data["now"] + seconds
            _schedule(data)
            while (moment := _next_event(data)) is not None and moment <= target:
                data["now"] = moment
                _events_due(data)
                _schedule(data)
            data["now"] = target
            _schedule(data)

    def delete(self, job_id: int) -> str:
        """oardel / DELETE: a job not ended goes to Error with a FRAG_JOB_REQUEST event; OAR's answer text."""
        with self._transaction() as data:
            job = _find(data, job_id)
            if job["state"] in FINAL_STATES:
                return f"Deleting the job = {job_id} ...This job was already killed or is already terminated."
            _kill(data, job, "FRAG_JOB_REQUEST", f"User {job['owner']} requested to frag the job {job_id}")
            return (
                f"Deleting the job = {job_id} ...REGISTERED.\nThe job(s) [ {job_id} ] will be deleted in a near future."
            )

    def hold(self, job_id: int) -> str:
        """oarhold / POST jobs/<id>/holds/new: a Waiting job goes to Hold; OAR's answer text."""
        return self._move(job_id, WAITING, HOLD, "Hold")

    def resume(self, job_id: int) -> str:
        """oarresume / POST jobs/<id>/resumptions/new: a job in Hold goes back to Waiting; OAR's answer text."""
        return self._move(job_id, HOLD, WAITING, "Resume")

    def _move(self, job_id: int, old: str, new: str, request: str) -> str:
        with self._transaction() as data:
            job = _find(data, job_id)
            if job["state"] != old:
                raise OarError(f"[{job_id}] {request} refused: the job is {job['state']}, not {old}")
            job["state"] = new
            return f"[{job_id}] {request} request was sent to the OAR server."

    def besteffort_kill(self, job_id: int) -> None:
        """Kill a Launching or Running best-effort job as OAR does for a normal job (Error, BESTEFFORT_KILL)."""
        with self._transaction() as data:
            job = _find(data, job_id)
            if "besteffort" not in job["types"] or job["state"] not in HOLDING_CORES:
                raise OarError(f"job {job_id} is not a running best-effort job ({job['state']}, {job['types']})")
            _kill(data, job, "BESTEFFORT_KILL", f"[sarko] kill the besteffort job {job_id}")

    def resubmit_automatically(self, job_id: int) -> int:
        """OAR resubmits the job under a new id: the old one goes to Error with RESUBMIT_JOB_AUTOMATICALLY."""
        with self._transaction() as data:
            job = _find(data, job_id)
            new = json.loads(json.dumps(job))
            new.update(
                id=data["next_id"],
                state=WAITING,
                events=[],
                exit_code=None,
                start_time=0,
                stop_time=0,
                submission_time=int(data["now"]),
                resubmit_job_id=job_id,
                stdout_file=output_file(new["name"], data["next_id"], "stdout"),
                stderr_file=output_file(new["name"], data["next_id"], "stderr"),
            )
            new["_sim"]["run_start"] = None
            data["next_id"] += 1
            data["jobs"].append(new)
            _kill(
                data,
                job,
                "RESUBMIT_JOB_AUTOMATICALLY",
                f"The job {job_id} was automatically resubmitted (new id = {new['id']})",
            )
            return new["id"]


# -- the state's content ---------------------------------------------------------------------------------------
def _new_cluster(cores: int, nodes: int, properties: dict[str, str], launch_delay: float) -> dict:
    per_node = max(1, cores // max(1, nodes))
    resources = []
    for index in range(cores):
        node = index // per_node + 1
        resources.append(
            {
                "resource_id": index + 1,
                "id": index + 1,
                "network_address": f"node{node}",
                "host": f"node{node}",
                "cpu": node,
                "core": index + 1,
                "cpuset": index % per_node,
                "state": "Alive",
                "besteffort": "YES",
                "deploy": "NO",
                "desktop_computing": "NO",
                "type": "default",
                "available_upto": 2147483647,
                "last_available_upto": 0,
                "expiry_date": 0,
                "finaud_decision": "NO",
                "next_finaud_decision": "NO",
                "next_state": "UnChanged",
                "last_job_date": 0,
                "scheduler_priority": 0,
                "state_num": 1,
                "suspended_jobs": "NO",
                "cpufreq": None,
                "cputype": None,
                "memnode": None,
                **properties,
            }
        )
    return {
        "now": EPOCH,
        "next_id": 1,
        "next_event_id": 1,
        "launch_delay": launch_delay,
        "resources": resources,
        "jobs": [],
        "files": {},
    }


def output_file(name: str | None, job_id: int, stream: str) -> str:
    """OAR's name of a job's stdout or stderr file: ``OAR.<id>.<stream>``, ``OAR.<name>.<id>.<stream>`` for a
    named job (OAR 2.5.9's default ``OAR.%jobname%.%jobid%``)."""
    return f"OAR.{name}.{job_id}.{stream}" if name else f"OAR.{job_id}.{stream}"


def _new_job(data: dict, *, params: str | None, cores: int, walltime: int, wanted: str, **fields) -> dict:
    owner, command, types, name = fields["owner"], fields["command"], fields["types"], fields["name"]
    directory = fields["directory"]
    job_id = data["next_id"]
    data["next_id"] += 1
    full_command = f"{command} {params}" if params else command
    words = shell_words(full_command)
    program = unwrapped(words)
    arguments = shlex.join(program[1:]) if program != words else params or shlex.join(shell_words(command)[1:])
    label, duration, exit_status = parse_param_line(shlex.join(program[1:]))
    return {
        "id": job_id,
        "array_id": job_id,
        "array_index": 1,
        "name": name,
        "owner": owner,
        "project": fields["project"] or "default",
        "properties": fields["properties"] or "",
        "queue": "besteffort" if "besteffort" in types else "default",
        "types": types,
        "type": "PASSIVE",
        "command": full_command,
        "params": arguments,  # not OAR's: the array line, or the arguments of a plain job
        "state": WAITING,
        "exit_code": None,
        "events": [],
        "walltime": walltime,
        "submission_time": int(data["now"]),
        "start_time": 0,
        "stop_time": 0,
        "scheduled_start": None,
        "launching_directory": directory or f"{data['homes']}/{owner}",
        "stdout_file": output_file(name, job_id, "stdout"),
        "stderr_file": output_file(name, job_id, "stderr"),
        "resubmit_job_id": 0,
        "message": "",
        "initial_request": fields["initial_request"],
        "wanted_resources": f'-l "{wanted},walltime={walltime // 3600}:{walltime % 3600 // 60}:{walltime % 60}"',
        "cpuset_name": f"{owner}_{job_id}",
        "dependencies": [],
        "reservation": "None",
        "assigned_resources": [],
        "_sim": {
            "label": label or (name or ""),
            "duration": duration,
            "exit": exit_status,
            "cores": cores,
            "working_directory_given": directory is not None,
            "run_start": None,
        },
    }


def public_job(job: dict) -> dict:
    return {key: value for key, value in job.items() if not key.startswith("_")}


def _find(data: dict, job_id: int) -> dict:
    for job in data["jobs"]:
        if job["id"] == int(job_id):
            return job
    raise JobNotFound(f"Job {job_id} not found")


def _add_event(data: dict, job: dict, kind: str, description: str) -> None:
    job["events"].append(
        {
            "event_id": data["next_event_id"],
            "job_id": job["id"],
            "type": kind,
            "description": description,
            "date": int(data["now"]),
            "to_check": "NO",
        }
    )
    data["next_event_id"] += 1


def _free_cores(data: dict) -> list[int]:
    used = {r for job in data["jobs"] if job["state"] in HOLDING_CORES for r in job["assigned_resources"]}
    return [r["resource_id"] for r in data["resources"] if r["resource_id"] not in used]


def _schedule(data: dict) -> None:
    """Start waiting jobs in order (normal queue first), killing best-effort jobs for normal ones; no backfill."""
    waiting = [j for j in data["jobs"] if j["state"] == WAITING]
    waiting.sort(key=lambda j: (j["queue"] == "besteffort", j["id"]))
    for job in waiting:
        need = job["_sim"]["cores"]
        free = _free_cores(data)
        if len(free) < need and job["queue"] != "besteffort":
            victims = sorted(
                (j for j in data["jobs"] if j["state"] in HOLDING_CORES and j["queue"] == "besteffort"),
                key=lambda j: -j["id"],
            )
            if len(free) + sum(len(v["assigned_resources"]) for v in victims) >= need:
                for victim in victims:
                    if len(_free_cores(data)) >= need:
                        break
                    _kill(data, victim, "BESTEFFORT_KILL", f"[sarko] kill the besteffort job {victim['id']}")
                free = _free_cores(data)
        if len(free) < need:
            return
        _launch(data, job, free[:need])


def _launch(data: dict, job: dict, cores: list[int]) -> None:
    now = data["now"]
    job["scheduled_start"] = int(now)
    if job["_sim"]["working_directory_given"] and not os.path.isdir(job["launching_directory"]):
        job.update(state=ERROR, start_time=int(now), stop_time=int(now))
        _add_event(data, job, "WORKING_DIRECTORY", f"Bad job working directory: {job['launching_directory']}")
        return
    job.update(state=LAUNCHING, start_time=int(now), assigned_resources=cores)
    job["_sim"]["run_start"] = now + data["launch_delay"]
    if data["launch_delay"] <= 0:
        job["state"] = RUNNING


def _end_of(job: dict) -> float:
    sim = job["_sim"]
    return sim["run_start"] + min(sim["duration"], job["walltime"])


def _next_event(data: dict) -> float | None:
    moments = [j["_sim"]["run_start"] for j in data["jobs"] if j["state"] == LAUNCHING]
    moments += [_end_of(j) for j in data["jobs"] if j["state"] == RUNNING]
    return min(moments, default=None)


def _events_due(data: dict) -> None:
    now = data["now"]
    for job in data["jobs"]:
        if job["state"] == LAUNCHING and job["_sim"]["run_start"] <= now:
            job["state"] = RUNNING
        if job["state"] == RUNNING and _end_of(job) <= now:
            if job["_sim"]["duration"] > job["walltime"]:
                _kill(data, job, "WALLTIME", f"[sarko] Job [{job['id']}] from {job['start_time']} reached its walltime")
            else:
                _finish(data, job)


def _finish(data: dict, job: dict) -> None:
    exit_status = job["_sim"]["exit"]
    job.update(state=TERMINATED, stop_time=int(data["now"]), exit_code=exit_status << 8)
    _add_event(data, job, "SWITCH_INTO_TERMINATE_STATE", f"[bipbip {job['id']}] Ask to change the job state")
    _write_outputs(data, job)


def _kill(data: dict, job: dict, kind: str, description: str) -> None:
    """The job ends in Error, with its events as the real OAR 2.5.9 records them: a kill of a running job is
    asked for (FRAG_JOB_REQUEST, after BESTEFFORT_KILL, before WALLTIME), sent (SEND_KILL_JOB) and done
    (SWITCH_INTO_ERROR_STATE); a waiting job deleted gets FRAG_JOB_REQUEST alone."""
    ran = job["state"] in HOLDING_CORES
    job.update(state=ERROR, stop_time=int(data["now"]))
    frag = (f"User {job['owner']} requested to frag the job {job['id']}",)
    sent = f"[Leon] Send the kill signal to oarexec on localhost for job {job['id']}"
    done = f"[bipbip {job['id']}] Ask to change the job state"
    if kind == "WALLTIME":
        events = [("FRAG_JOB_REQUEST", *frag), (kind, description)]
    elif kind == "FRAG_JOB_REQUEST":
        events = [(kind, description)]
    elif kind == "BESTEFFORT_KILL":
        events = [(kind, description), ("FRAG_JOB_REQUEST", *frag)]
    else:
        events = [(kind, description)]
    if ran and kind != "RESUBMIT_JOB_AUTOMATICALLY":
        events += [("SEND_KILL_JOB", sent), ("SWITCH_INTO_ERROR_STATE", done)]
    for event_kind, text in events:
        _add_event(data, job, event_kind, text)
    if ran:
        _write_outputs(data, job)


def _write_outputs(data: dict, job: dict) -> None:
    """The job's stdout and stderr, in the state (for the media endpoint) and, when it exists, in its folder."""
    label = job["_sim"]["label"]
    texts = {job["stdout_file"]: f"stdout of {label}\n", job["stderr_file"]: f"stderr of {label}\n"}
    if job["state"] == TERMINATED and job["_sim"]["exit"]:
        texts[job["stderr_file"]] += f"{label} exited with status {job['_sim']['exit']}\n"
    for filename, text in texts.items():
        path = f"{job['launching_directory']}/{filename}"
        data["files"][path] = text
        with contextlib.suppress(OSError):
            if os.path.isdir(job["launching_directory"]):
                Path(path).write_text(text)
                _share(Path(path))
