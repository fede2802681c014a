"""``oar-ssh``: OAR's commands (``oarsub``, ``oarstat -J``, ``oardel``) through a transport: ssh, or local
commands on a frontend.

It shares with ``oar-rest`` the translation table and the array job (:mod:`cigri.adapters.oar`). The
param file and the jobs' environment file are staged on the cluster through the transport
(``<remote_dir>/<batch key>.params`` and ``.env``, 0600, written by a script sent on stdin: never in a
command line) and ``oarsub``'s answer is recorded there too (``<batch key>.ids``) in the same round trip,
so ``find_batch`` knows a batch even when cigri died before reading the answer; a submission whose
answer is there already, or still being made by a killed pass's ssh client, answers it instead of
submitting again (:func:`~.transport.at_most_once`). The remote ids are then ordered by the
``array_index`` ``oarstat`` reports (falling back on the order ``oarsub`` printed them in, which is the
index order, for jobs ``oarstat`` no longer lists).

The cluster's size comes from the ``slots`` option, or from ``oarnodes -J`` when it is not set.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence

from ..errors import AdapterError, SubmitError
from ..model import Capacity, Cluster, JobSpec, RemoteStatus
from . import AdapterContext, Option, expand_home
from .files import FILE_OPTIONS, RemoteFiles
from .oar import (
    MOVED_FROM,
    OAR_OPTIONS,
    OarJob,
    array_command,
    capacity_of_resources,
    check_settings,
    checkpoint_request,
    cigri_job,
    environment_file,
    ids_by_index,
    job_of,
    output_path,
    statuses,
    still_unmoved,
    tally,
    walltime_request,
)
from .reading import whole
from .slurm import check_batch
from .transport import CommandRunner, RemoteCommands, at_most_once, here_document, read_load, runner_for, shell

# what OAR's commands say when the server or its database is not there (not "your job is wrong")
UNREACHABLE = re.compile(
    r"can ?not connect|could not connect|connection refused|DBI connect|timed? ?out|OAR server .* not respond",
    re.I,
)
_JOB_ID = re.compile(r"^OAR_JOB_ID=([0-9]+)\s*$", re.M)
_ARRAY_ID = re.compile(r"^OAR_ARRAY_ID=([0-9]+)\s*$", re.M)
IDS_PER_QUERY = 200  # -j options per oarstat call


class OarSsh(RemoteFiles, RemoteCommands):
    """OAR's commands through ssh, or locally on a frontend."""

    options = (
        Option("host", str, "ssh: the cluster's frontend (an ~/.ssh/config alias works); none: run locally"),
        Option("port", int, "ssh: port", minimum=1),
        Option("user", str, "ssh: login name (the OAR user the jobs run as)"),
        Option("identity_file", str, "ssh: private key for cron, which has no agent"),
        Option("bin_dir", str, "where the cluster's OAR commands are (default: found on its PATH)"),
        Option("remote_dir", str, "cigri's folder on the cluster for param files (default ~/.cigri)"),
        Option("slots", int, "cores of the cluster (default: counted by oarnodes -J)", minimum=1),
        *OAR_OPTIONS,
        *FILE_OPTIONS,
    )
    best_effort = True  # OAR's besteffort job type
    unreachable = UNREACHABLE

    def __init__(self, cluster: Cluster, context: AdapterContext, runner: CommandRunner | None = None):
        self.name = cluster.name
        self.config = cluster.config
        self.clock = context.clock
        self.runner = runner or runner_for(cluster.config)
        self.queue_depth = int(cluster.config.get("queue_depth", 100))
        self.max_batch = int(cluster.config.get("max_batch", 1000))
        self._home: str | None = None
        self._followed: dict[str, str] = {}  # remote id -> the job OAR resubmitted it as, lately seen

    # ---- plumbing -------------------------------------------------------------------------------

    def _oarstat(self, extra: Sequence[str]) -> list[OarJob]:
        """Jobs as ``oarstat -f -J`` lists them: a JSON object of records keyed by job id."""
        return [job for key, item in self._records(extra) if (job := job_of(item, key))]

    def _records(self, extra: Sequence[str]) -> list[tuple[str | None, dict]]:
        """``oarstat -f -J``'s records, each with its key (None in a list)."""
        result = self._run([self._cmd("oarstat"), "-f", "-J", *extra])
        text = result.stdout.strip()
        if not text:  # oarstat says nothing (and may exit non-zero) when no job matches
            if result.ok or not result.stderr.strip() or "unknown" in result.stderr.lower():
                return []
            raise AdapterError(f"{self.name}: {result.describe()}")
        try:
            data = json.loads(text)
        except ValueError:
            raise AdapterError(f"{self.name}: oarstat -J answered something not JSON: {text[:200]!r}") from None
        if not isinstance(data, dict | list):
            raise AdapterError(f"{self.name}: oarstat -J answered {text[:80]!r}, not a JSON object of jobs")
        records = data.items() if isinstance(data, dict) else ((None, item) for item in data)
        return [(key, item) for key, item in records if isinstance(item, dict)]

    def details(self, remote_id: str) -> dict:
        """``oarstat -f -J -j ID``'s record of the job."""
        records = self._records(["-j", remote_id]) if whole(remote_id) is not None else []
        for key, item in records:
            if str(item.get("id", key)) == remote_id:
                return item
        raise AdapterError(f"{self.name}: OAR knows no job {remote_id}")

    def _jobs(self, ids: Sequence[str]) -> dict[str, OarJob]:
        found: dict[str, OarJob] = {}
        ids = [i for i in dict.fromkeys(ids) if whole(i) is not None]
        for start in range(0, len(ids), IDS_PER_QUERY):
            chunk = ids[start : start + IDS_PER_QUERY]
            options = [word for job_id in chunk for word in ("-j", job_id)]
            found.update({job.id: job for job in self._oarstat(options) if job.id in chunk})
        return found

    def _mapped(self, answer: str) -> list[str] | None:
        """The remote ids of a batch from ``oarsub``'s answer, by array index."""
        printed = _JOB_ID.findall(answer)
        if not printed:
            return None
        array = _ARRAY_ID.search(answer)
        array_id = array.group(1) if array else printed[0]
        return ids_by_index(self._jobs(printed).values(), array_id, len(printed)) or printed

    # ---- the contract ---------------------------------------------------------------------------

    def check(self, settings: dict, path: str) -> None:
        check_settings(settings, path)

    def capacity(self) -> Capacity:
        if self.config.get("slots"):
            total, used, down = int(self.config["slots"]), 0, 0
        else:
            result = self._run([self._cmd("oarnodes"), "-J"])
            try:
                data = json.loads(result.stdout) if result.ok else None
            except ValueError:
                data = None
            if not isinstance(data, dict | list):
                raise AdapterError(f"{self.name}: cannot count resources ({result.describe()}); set the slots option")
            records = data.values() if isinstance(data, dict) else data
            total, used, down = capacity_of_resources(r for r in records if isinstance(r, dict))
        login = self.config.get("user")
        _, grid_used, queued = tally(self._oarstat(["-u", login] if login else ["-u"]), cigri_job)
        used = min(total, max(used, grid_used))
        return Capacity(total=total, used=used, grid_used=grid_used, queued=queued, down=down)

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        if not check_batch(self.name, specs, self.max_batch):
            return []
        spec, folder = specs[0], self.remote_dir
        params_file, ids_file, env_file = (f"{folder}/{batch_key}.{ext}" for ext in ("params", "ids", "env"))
        environment = environment_file(spec)
        command, params = array_command(specs, self.home, shlex.quote(env_file) if environment else None)
        oarsub = self._oarsub(batch_key, spec, params_file if params is not None else None, command)
        # one round trip: stage the param file (and the environment file), submit, and record the answer on
        # the cluster itself (HUP ignored), so that find_batch knows it even if cigri dies before reading it;
        # at most once per batch key, should the submission of a killed pass still be running. All of it on
        # stdin: the environment may hold secrets, which no command line may show
        staged = {params_file: params or "", **({env_file: environment} if environment else {})}
        documents = {path: here_document(text) for path, text in staged.items()}
        writes = " && ".join(f"cat > {shlex.quote(path)} {redirection}" for path, (redirection, _) in documents.items())
        steps = f"umask 077 && mkdir -p {shlex.quote(folder)} && " + at_most_once(
            params_file,
            ids_file,
            f"{writes} && trap '' HUP && {shlex.join(oarsub)} > {shlex.quote(ids_file)}.tmp < /dev/null && "
            f"mv {shlex.quote(ids_file)}.tmp {shlex.quote(ids_file)} && cat {shlex.quote(ids_file)}",
        )
        result = self._run_script(steps + "\n" + "".join(lines for _, lines in documents.values()))
        if not result.ok:
            last = (result.stderr.strip().splitlines() or result.stdout.strip().splitlines() or [""])[-1]
            raise SubmitError(f"{self.name} refused the batch: oarsub exited with {result.returncode}: {last}")
        ids = self._mapped(result.stdout)
        if ids is None or len(ids) != len(specs):
            raise AdapterError(f"{self.name}: oarsub answered {result.stdout.strip()[-300:]!r}")
        return ids

    def _oarsub(self, batch_key: str, spec: JobSpec, params_file: str | None, command: str) -> list[str]:
        """oarsub's argv for a batch (its param file, when it is an array)."""
        oarsub = [
            self._cmd("oarsub"),
            "-l",
            walltime_request(spec),
            "-n",
            batch_key,
            "-d",
            expand_home(spec.directory, self.home),
        ]
        if spec.properties.strip():
            oarsub += ["-p", spec.properties.strip()]
        if spec.project:
            oarsub += ["--project", spec.project]
        if spec.best_effort:
            oarsub += ["-t", "besteffort"]
        if (checkpoint := checkpoint_request(spec)) is not None:
            oarsub += ["--checkpoint", str(checkpoint[0]), "--signal", str(checkpoint[1])]
        if params_file is not None:
            oarsub += ["--array-param-file", params_file]
        return [*oarsub, command]

    def find_batch(self, batch_key: str) -> list[str] | None:
        ids_file = shlex.quote(f"{self.remote_dir}/{batch_key}.ids")
        result = self._run(shell(f"[ -e {ids_file} ] && cat {ids_file} || true"))
        return self._mapped(result.stdout)

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        out, self._followed = statuses(remote_ids, self._jobs)
        return out

    def cancel(self, remote_ids: Sequence[str]) -> None:
        targets = list(dict.fromkeys([*remote_ids, *(self._followed[r] for r in remote_ids if r in self._followed)]))
        if not targets:
            return
        result = self._run([self._cmd("oardel"), *targets])
        if not result.ok and not re.search(r"unknown|not found|already", result.stdout + result.stderr, re.I):
            raise AdapterError(f"{self.name}: {result.describe()}")

    def hold(self, remote_ids: Sequence[str]) -> None:
        self._hold_or_resume("hold", remote_ids)

    def release(self, remote_ids: Sequence[str]) -> None:
        self._hold_or_resume("resume", remote_ids)

    def _hold_or_resume(self, verb: str, remote_ids: Sequence[str]) -> None:
        """``oarhold`` / ``oarresume`` on the jobs (the job OAR resubmitted one as, when it did), in one
        command; when OAR refuses some, ``oarstat`` tells which were truly refused."""
        targets = list(dict.fromkeys(self._followed.get(rid, rid) for rid in remote_ids))
        if not targets:
            return
        result = self._run([self._cmd(f"oar{verb}"), *targets])
        if result.ok:
            return
        refused = still_unmoved(dict.fromkeys(targets, result.describe()), self._jobs(targets), verb)
        if refused:
            raise AdapterError(f"{self.name}: {result.describe()} (still {MOVED_FROM[verb]}: {len(refused)} jobs)")

    def tail(self, remote_id: str, stream: str, lines: int) -> str:
        job = self._jobs([self._followed.get(remote_id, remote_id)]).get(self._followed.get(remote_id, remote_id))
        path = output_path(job, stream) if job else None
        if path is None:
            return ""
        path = expand_home(path, self.home)
        result = self._run(["tail", "-n", str(lines), path] if lines else ["cat", path])
        return result.stdout.rstrip("\n") if result.ok else ""

    def activity(self) -> object:
        return None

    def server_load(self, host: str) -> float:
        """The 1-minute load of a file-server host, read through the cluster's transport (a flow sensor)."""
        return read_load(self.runner, host, self.name)

    def close(self) -> None:
        self.runner.close()
