"""``slurm-rest``: Slurm through slurmrestd (JSON over HTTP, JWT auth), for clusters that offer no ssh.

It behaves as ``slurm-ssh`` and shares its helpers (:mod:`cigri.adapters.slurm`): a batch is one array
job named after the batch key, task *i* runs spec *i*, remote ids are ``<array job id>_<i>``. What
differs, because slurmrestd cannot touch files:

- the args lines travel inside the job script (a ``printf`` of quoted lines) instead of a staged file;
- the job's outputs go to ``output_dir`` (default: the home directory), which must already exist, as
  ``cigri-<array>_<task>.out`` / ``.err``: slurmd creates the files, not their folder;
- the home directory comes from the ``home`` option, or from ``$HOME`` read through ssh when ``host``
  is set; ssh is also the only way to read a job's stderr tail (without it, ``tail`` says so);
- the number of tasks of a batch is kept in the job's comment, so that ``find_batch`` answers right
  even when slurmctld has forgotten some tasks;
- the OpenAPI version is the newest of :data:`VERSIONS` the server answers a ping on (``api`` forces one).

What a pass costs follows cigri's work, not what slurmctld holds: slurmrestd 22.05 (v0.0.38) lists jobs
only all at once, every user's, ended ones included (``GET /jobs``; its ``update_time`` only turns an
unchanged cluster into HTTP 304, and any change anywhere into the whole listing again). So the adapter
reads each array it needs with ``GET /job/<array id>`` (every task of that array, one request), and
keeps a small memory between processes (:class:`Memory`): its batches, their array ids and which may
still have tasks pending or running, and the API version found. ``states`` reads the arrays of the ids
it is asked about, ``capacity`` the arrays the memory holds live, and ``find_batch`` answers from the
memory; only a batch the memory lacks, and a cluster without memory yet, cost the full listing.

Every HTTP exchange goes through :meth:`SlurmRest._request`, which maps failures once: unreachable,
timeout, authentication refusals (HTTP 401) and slurmctld's failures (HTTP 500, whose "Unspecified error"
the token's own expiry tells apart) become :class:`TransportError`, a submission refused for the job's
own settings :class:`SubmitError`.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import AdapterError, ConfigError, JdlError, SubmitError, TransportError
from ..model import Capacity, Cluster, JobSpec, RemoteState, RemoteStatus
from ..private import write_private
from . import AdapterContext, Option, expand_home, http
from .files import FILE_OPTIONS, RemoteFiles
from .packing import RemotePackFiles
from .reading import count, epoch, listed, one_line, whole
from .slurm import (
    LISTING_TTL,
    MAX_ARRAY_SIZE,
    SLURM_OPTIONS,
    UNREACHABLE,
    Activity,
    args_lines,
    batch_options,
    check_batch,
    constraint,
    ended_by_slurm,
    job_script,
    live,
    resource_options,
    translate,
)
from .transport import TIMEOUT, CommandRunner, SshRunner, shell

if TYPE_CHECKING:
    import httpx  # cigri.adapters.http imports it when a request is made

VERSIONS = ("v0.0.39", "v0.0.38", "v0.0.37")  # newest first: the data formats this adapter reads and writes

# what slurm.batch_options says as sbatch options, said as slurmrestd job fields (--time: see time_limit)
FIELDS: dict[str, tuple[str, type]] = {
    "--nodes": ("nodes", int),
    "--ntasks-per-node": ("tasks_per_node", int),
    "--ntasks": ("tasks", int),
    "--cpus-per-task": ("cpus_per_task", int),
    "--chdir": ("current_working_directory", str),
    "--account": ("account", str),
    "--constraint": ("constraints", str),
    "--partition": ("partition", str),
    "--qos": ("qos", str),
}
# the environment of the jobs: slurmrestd requires one, and passes nothing of the caller's
PATH = "/bin:/usr/bin:/usr/local/bin"
INVALID_JOB = 2017  # "Invalid job id specified": the job is gone, which a cancel does not mind
# a task update's or kill's answers that are no error: 22.05 tells of a task update that worked with an
# error without a number; then the task gone, already done (2021) or finished (2084)
UPDATED_OR_GONE = {None, INVALID_JOB, 2021, 2084}
KEEP_ENDED = 86400  # seconds the memory keeps a batch whose tasks all ended (find_batch still knows it)
_COMMENT = re.compile(r"cigri batch of ([0-9]{1,7}) tasks")
_UNAVAILABLE = "({stream} tail unavailable: slurmrestd cannot read files; configure ssh for this cluster)"


@dataclass(frozen=True)
class Task:
    """One array task as slurmrestd lists it."""

    array_id: int
    index: int
    state: str
    raw_exit: int | None
    started: float | None
    ended: float | None
    cpus: int
    name: str
    comment: str
    reason: str

    @property
    def remote_id(self) -> str:
        return f"{self.array_id}_{self.index}"

    @property
    def live(self) -> bool:
        return live(self.state)

    @property
    def count(self) -> int:
        """The number of tasks of its batch: from the comment cigri gave the array, else its own index."""
        match = _COMMENT.search(self.comment)
        return int(match.group(1)) if match and int(match.group(1)) <= MAX_ARRAY_SIZE else self.index


def number(value: object) -> int | None:
    """An integer field: plain in v0.0.37/38, ``{"set": ..., "number": ...}`` in v0.0.39; None for what is
    not a whole number (see :func:`cigri.adapters.reading.count`)."""
    if isinstance(value, dict):
        settled = value.get("set", True) and not value.get("infinite")
        return count(value.get("number")) if settled else None
    return count(value)


def first_word(value: object) -> str:
    """A state: a string, or a list of flags whose first is the state (v0.0.39 node states)."""
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return str(value or "")


_TASK_RANGE = re.compile(r"([0-9]{1,7})(?:-([0-9]{1,7})(?::([0-9]{1,7}))?)?")


def task_indices(text: str) -> list[int]:
    """The indices of a pending array record's ``array_task_string``: ``9-12``, ``1,3,5-9:2``, ``2-7%4``.
    A part that is no such range (a step of 0, an index beyond any array) is not understood: left out."""
    out: list[int] = []
    for part in text.split("%")[0].split(","):
        match = _TASK_RANGE.fullmatch(part.strip())
        if not match:
            continue
        low, high, step = (int(group) if group else None for group in match.groups())
        if step == 0 or (high or low) >= MAX_ARRAY_SIZE:
            continue
        indices = range(low, (high or low) + 1, step or 1)
        if len(out) + len(indices) > MAX_ARRAY_SIZE:  # parts repeated past any array's size: not understood
            return []
        out.extend(indices)
    return out


def tasks_of(jobs: Iterable[dict], user: str) -> list[Task]:
    """The array tasks of ``user``'s cigri jobs among slurmrestd's job records."""
    tasks = []
    for job in jobs:
        if not isinstance(job, dict):
            continue
        name, owner = str(job.get("name") or ""), str(job.get("user_name") or "")
        array_id = number(job.get("array_job_id"))
        if not array_id or array_id < 0 or owner != user or not name.startswith("cigri."):
            continue
        index = number(job.get("array_task_id"))
        if index is not None and not 0 <= index < MAX_ARRAY_SIZE:
            continue
        # a pending array not yet split is one record for all its waiting tasks
        indices = [index] if index is not None else task_indices(str(job.get("array_task_string") or ""))
        reason = str(job.get("state_reason") or "")
        common = {
            "state": first_word(job.get("job_state")),
            "raw_exit": number(job.get("exit_code")),
            "started": epoch(number(job.get("start_time"))),
            "ended": epoch(number(job.get("end_time"))),
            "cpus": max(1, number(job.get("cpus")) or 1),
            "name": name,
            "comment": str(job.get("comment") or ""),
            "reason": "" if reason == "None" else reason,
        }
        tasks.extend(Task(array_id, i, **common) for i in indices)
    return tasks


def array_of(remote_id: str) -> int | None:
    array_id, _, index = remote_id.partition("_")
    return whole(array_id) if whole(index) is not None else None


class Memory:
    """What slurm-rest remembers between processes (cron runs one almighty per pass), in
    ``<state dir>/clusters/<cluster>/slurm-rest.json``: each batch it submitted (key, array id, number of
    tasks, when) and whether its array may still have tasks pending or running, and the API version the
    server offered. No file means nothing is known yet: the adapter then reads the full listing once.

    A write goes to a temporary file renamed over the old one, merged with what is on disk at that moment
    (``gridclusters`` may write next to a running almighty). A memory that cannot be written leaves the
    adapter as it is without one: correct, only slower."""

    def __init__(self, path: Path, clock):
        self.path, self.clock = path, clock
        self.batches: dict[int, dict] | None = None
        self.api: dict | None = None
        self._loaded = False
        self._changed: dict[int, dict] = {}
        self._api_changed = False
        self._started = False  # a memory begun here, not on disk yet

    def _read(self) -> tuple[dict[int, dict] | None, dict | None]:
        """(batches, api) on disk; None for what is not there (or damaged: rebuilt from the full listing)."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None, None
        data = data if isinstance(data, dict) else {}
        batches, api = data.get("batches"), data.get("api")
        if isinstance(batches, dict):
            batches = {whole(a): e for a, e in batches.items() if whole(a) is not None and isinstance(e, dict)}
        return (batches if isinstance(batches, dict) else None), (api if isinstance(api, dict) else None)

    def load(self) -> bool:
        """Is there a memory? (read once)"""
        if not self._loaded:
            self.batches, self.api = self._read()
            self._loaded = True
        return self.batches is not None

    def live(self) -> list[int]:
        self.load()
        return sorted(a for a, e in (self.batches or {}).items() if e.get("live"))

    def find(self, batch_key: str) -> tuple[int, int] | None:
        """(array id, tasks) of a batch, the first submission should there be two."""
        self.load()
        found = [(a, count(e.get("tasks")) or 0) for a, e in (self.batches or {}).items() if e.get("key") == batch_key]
        found = [(a, tasks if tasks <= MAX_ARRAY_SIZE else 0) for a, tasks in found]  # more: damaged, unknown
        return min(found) if found else None

    def find_array(self, array_id: int) -> bool:
        self.load()
        return array_id in (self.batches or {})

    def note_start(self) -> None:
        """From now on there is a memory (written at the next save), even an empty one."""
        if not self.load():
            self.batches, self._started = {}, True

    def version(self, url: str) -> str | None:
        self.load()
        return self.api.get("version") if self.api and self.api.get("url") == url else None

    def note(self, array_id: int, **fields) -> None:
        """Record a batch, or update it (fields: key, tasks, at, live)."""
        self.note_start()
        entry = {"at": self.clock.now(), **self.batches.get(array_id, {}), **fields}
        if entry != self.batches.get(array_id):
            self.batches[array_id] = entry
            self._changed[array_id] = entry

    def note_version(self, url: str, version: str | None) -> None:
        self.load()
        api = {"url": url, "version": version} if version else None
        if api != self.api:
            self.api, self._api_changed = api, True

    def save(self) -> None:
        if not (self._changed or self._api_changed or self._started):
            return
        on_disk, _ = self._read()
        batches = None
        if self.batches is not None or on_disk is not None:
            now = self.clock.now()
            merged = {**(on_disk or {}), **self._changed}
            batches = {a: e for a, e in merged.items() if e.get("live") or now - (epoch(e.get("at")) or 0) < KEEP_ENDED}
        data = {"batches": {str(a): e for a, e in sorted(batches.items())} if batches is not None else None}
        data["api"] = self.api
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
            write_private(temporary, json.dumps(data, indent=1) + "\n")
            os.replace(temporary, self.path)
        except OSError:
            return
        self.batches, self._changed, self._api_changed, self._started = batches, {}, False, False


def args_printer(specs: Sequence[JobSpec], home: str) -> str:
    """A shell command printing the args lines, for job_script: the script carries them, quoted once more.

    Not a here-document: job_script pipes ``{args} | sed``, and ``cat <<EOF ... EOF | sed`` leaves the
    here-document unterminated (the delimiter must stand alone on its line)."""
    lines = args_lines(specs, home).rstrip("\n").split("\n")
    return "printf '%s\\n' " + " ".join(shlex.quote(line) for line in lines)


def read_token(path: str) -> str:
    """The JWT in ``path``: the file's only content, or the value of its ``SLURM_JWT=`` line."""
    text = http.read_secret(path)
    lines = [line.strip().removeprefix("export ") for line in text.splitlines() if line.strip()]
    assigned = [line.split("=", 1)[1].strip().strip("'\"") for line in lines if line.startswith("SLURM_JWT=")]
    token = assigned[0] if assigned else (lines[0] if len(lines) == 1 else "")
    if not token or any(c.isspace() for c in token):
        raise ConfigError(f"token_file {path} holds no token (the token alone, or a SLURM_JWT=... line)")
    return token


def token_expiry(token: str) -> float | None:
    """When a JWT expires (its ``exp`` claim, readable without the key; inf without one), or None when
    ``token`` is no JWT at all."""
    try:
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    except (IndexError, ValueError):
        return None
    if not isinstance(claims, dict):
        return None
    return float(claims["exp"]) if isinstance(claims.get("exp"), int | float) else math.inf


def error_text(data: dict) -> str:
    """The ``errors`` of a slurmrestd answer, as one line."""
    texts = []
    for item in listed(data.get("errors")):
        if isinstance(item, dict):
            error, description = one_line(str(item.get("error") or "")), one_line(str(item.get("description") or ""))
            texts.append(f"{error} ({description})" if description and description != error else error)
    return "; ".join(t for t in texts if t)


def error_numbers(data: dict) -> set[int | None]:
    """The error numbers of a slurmrestd answer (None for an error without one, or with no number)."""
    numbers = set()
    for item in listed(data.get("errors")):
        if isinstance(item, dict):
            value = item.get("error_number", item.get("error_code", item.get("errno")))
            numbers.add(value if type(value) is int else None)
    return numbers


class SlurmRest(RemotePackFiles, RemoteFiles):
    """Slurm through its REST daemon, slurmrestd (JWT authentication). slurmrestd moves no file: with ssh
    (``host``) the cluster stages input files and gives outputs back through it, as slurm-ssh does."""

    options = (
        Option("url", str, "slurmrestd's base URL, e.g. https://slurm.example.org:6820 (required)"),
        Option("user", str, "Slurm user the jobs run as, sent as X-SLURM-USER-NAME (required)"),
        Option(
            "token_file",
            str,
            "file holding the user's JWT (`scontrol token`: the token alone or a SLURM_JWT=... line; keep it 0600)",
        ),
        http.INSECURE,
        Option(
            "api",
            str,
            f"OpenAPI version: {', '.join(VERSIONS)} (default: the newest the server offers)",
            choices=VERSIONS,
        ),
        Option("home", str, "the user's home directory on the cluster (default: $HOME through ssh; needed without)"),
        Option(
            "output_dir",
            str,
            "existing folder on the cluster for the jobs' cigri-<array>_<task>.out/.err (default: the home "
            "directory; slurmd does not create folders)",
        ),
        Option("host", str, "ssh: login host, to read $HOME and the jobs' stderr (slurmrestd cannot read files)"),
        Option("port", int, "ssh: port", minimum=1),
        Option("ssh_user", str, "ssh: login name (default: user)"),
        Option("identity_file", str, "ssh: private key for cron, which has no agent"),
        *(option for option in SLURM_OPTIONS if option.name != "accounting"),
        *FILE_OPTIONS,
    )

    def __init__(
        self,
        cluster: Cluster,
        context: AdapterContext,
        runner: CommandRunner | None = None,
        transport: httpx.BaseTransport | None = None,  # tests: an httpx.MockTransport
    ):
        self.name = cluster.name
        self.config = cluster.config
        self.clock = context.clock
        self.timeout = float(cluster.config.get("timeout") or TIMEOUT)
        self.queue_depth = int(cluster.config.get("queue_depth", 100))
        self.max_batch = int(cluster.config.get("max_batch", 1000))
        self.best_effort = bool(cluster.config.get("besteffort_partition") or cluster.config.get("besteffort_qos"))
        http.check_secret_url(self.name, type(self), self.config)  # before any token is read
        self.runner = runner or self._ssh_runner()
        self.transport = transport
        self._client: httpx.Client | None = None
        self._token = ""  # read with the client: what an HTTP 500 is judged by
        self._api: str | None = None
        self._api_unconfirmed = False  # the version came from the memory and no request has used it yet
        self._home: str | None = None
        self._memory = Memory(context.state_dir / "clusters" / cluster.name / "slurm-rest.json", context.clock)
        self._reads: dict[int, tuple[float, list[Task]]] = {}  # array id -> (when read, its tasks)
        self._activity = Activity(context.clock)

    @classmethod
    def validate(cls, name: str, config: dict) -> None:
        """What ``gridclusters add/set`` can check: the options every request needs, and a way to the
        user's home directory (slurmrestd cannot tell it: the home option, or ssh through host)."""
        for key in ("url", "user", "token_file"):
            if not config.get(key):
                raise ConfigError(f"cluster {name!r} (slurm-rest) needs the {key} option")
        if not config.get("home") and not config.get("host"):
            raise ConfigError(f"cluster {name!r} (slurm-rest) needs the home option, or host for ssh to read $HOME")

    # ---- plumbing -------------------------------------------------------------------------------

    def _setting(self, key: str) -> str:
        value = self.config.get(key)
        if not value:
            raise ConfigError(f"cluster {self.name!r} (slurm-rest) needs the {key} option")
        return str(value)

    def _ssh_runner(self) -> SshRunner | None:
        if not self.config.get("host"):
            return None
        return SshRunner(
            self.config["host"],
            user=self.config.get("ssh_user") or self.config.get("user"),
            port=self.config.get("port"),
            identity_file=self.config.get("identity_file"),
            timeout=self.timeout,
        )

    @property
    def user(self) -> str:
        return self._setting("user")

    @staticmethod
    def sends_secret(config: dict) -> bool:
        return True  # the user's JWT, in every request

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            insecure = bool(self.config.get("insecure"))
            url = http.check_url(self.name, self._setting("url"), secret=True, insecure=insecure)
            self._token = read_token(self._setting("token_file"))
            headers = {"X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": self._token}
            self._client = http.client(url.rstrip("/"), self.timeout, self.transport, headers=headers)
        return self._client

    def _request(
        self,
        method: str,
        path: str,
        payload: dict | None = None,
        *,
        refused: type[AdapterError] = TransportError,
        what: str = "",
        gone_ok: bool = False,
        probing: bool = False,
    ) -> dict | None:
        """The one door to slurmrestd: the answer's JSON, or a CigriError (never the token in it).

        ``refused``: raised when Slurm rejects the request itself (SubmitError for a submission), saying
        it refused ``what``;
        ``gone_ok``: "Invalid job id" is an answer, not an error; ``probing``: HTTP 404 gives None."""
        url = self._setting("url")
        response = http.send(
            self.name, "slurmrestd", url, self.timeout, lambda: self.client, method, path, json=payload
        )
        try:
            data = response.json()
        except ValueError:
            data = {}
        data = data if isinstance(data, dict) else {}
        status, text = response.status_code, error_text(data) or one_line(response.text)[:200]
        if status < 400:
            return data
        if status == 401:
            raise TransportError(
                f"{self.name}: slurmrestd authentication refused (HTTP 401) for user {self.user}: "
                "check the user and token_file options"
            )
        if status == 404 and probing:
            return None
        numbers = error_numbers(data)
        if gone_ok and numbers == {INVALID_JOB}:
            return data
        if status == 500 and -1 in numbers:
            raise TransportError(self._unspecified(text))
        if UNREACHABLE.search(text):
            raise TransportError(
                f"{self.name}: slurmrestd cannot reach slurmctld, or slurmctld refused the token "
                f"(HTTP {status}: {text})"
            )
        if data.get("errors") and refused is not TransportError:
            raise refused(f"{self.name} refused {what or f'{method} {path}'}: {text}")
        if status >= 500:
            raise TransportError(f"{self.name}: slurmrestd answered HTTP {status} to {method} {path}: {text}")
        raise AdapterError(f"{self.name}: slurmrestd answered HTTP {status} to {method} {path}: {text}")

    def _unspecified(self, text: str) -> str:
        """What an HTTP 500 "Unspecified error" (-1) means. slurmrestd 22.05 answers the same body, to the
        byte, whether slurmctld refused the token or could not be reached (recorded in
        tests/fixtures/slurm/rest-500.*): the token itself tells which it can be."""
        expiry = token_expiry(self._token)
        if expiry is None:
            return f"{self.name}: slurmrestd authentication refused (HTTP 500: {text}): token_file holds no JWT"
        if expiry <= self.clock.now():
            when = datetime.fromtimestamp(expiry, UTC).strftime("%Y-%m-%d %H:%M UTC")
            return (
                f"{self.name}: slurmrestd authentication refused (HTTP 500: {text}): the token in token_file "
                f"expired at {when}: renew it"
            )
        return (
            f"{self.name}: slurmrestd got no answer from slurmctld (HTTP 500: {text}): slurmctld is down or "
            "unreachable (or refused a token it did not sign; the token has not expired)"
        )

    @property
    def api(self) -> str:
        """The OpenAPI version in use: forced by ``api`` (no probe), else the one the memory holds for this
        url, else the newest of VERSIONS that answers a ping (then remembered)."""
        forced = self.config.get("api")
        if forced and forced not in VERSIONS:
            raise ConfigError(f"cluster {self.name!r}: api {forced!r} is not one of {', '.join(VERSIONS)}")
        if self._api is None and forced:
            self._api = forced
        if self._api is None:
            self._api = self._memory.version(self._setting("url"))
            self._api_unconfirmed = self._api is not None
        if self._api is None:
            self._api = self._probe_version()
        return self._api

    def _probe_version(self) -> str:
        for version in VERSIONS:
            if self._request("GET", f"/slurm/{version}/ping", probing=True) is not None:
                self._memory.note_version(self._setting("url"), version)
                self._memory.save()
                return version
        raise TransportError(f"{self.name}: slurmrestd at {self.config['url']} offers none of {', '.join(VERSIONS)}")

    def _slurm(self, method: str, path: str, payload: dict | Callable[[], dict] | None = None, **kwargs) -> dict:
        """A request under /slurm/<version>/. A remembered version the server no longer offers (HTTP 404:
        slurmrestd was upgraded) is probed again and the request sent once more; ``payload`` may be a
        function of the version in use, so that it is built again for the new one."""
        version = self.api
        unconfirmed = self._api_unconfirmed
        body = payload() if callable(payload) else payload
        answer = self._request(method, f"/slurm/{version}/{path}", body, probing=unconfirmed, **kwargs)
        self._api_unconfirmed = False
        if answer is None and unconfirmed:
            self._api = self._probe_version()
            body = payload() if callable(payload) else payload
            answer = self._request(method, f"/slurm/{self._api}/{path}", body, **kwargs)
        return answer or {}

    @property
    def home(self) -> str:
        if self._home is None:
            if self.config.get("home"):
                self._home = str(self.config["home"]).rstrip("/") or "/"
            elif self.runner is not None:
                result = self.runner.run(shell('printf %s "$HOME"'))
                if not result.ok or not result.stdout.startswith("/"):
                    raise TransportError(f"{self.name}: cannot read the home directory: {result.describe()}")
                self._home = result.stdout
            else:
                raise ConfigError(f"cluster {self.name!r} (slurm-rest) needs the home option, or ssh (host) to read it")
        return self._home

    @property
    def moves_files(self) -> bool:
        """Files go through ssh: without it (no ``host``) this cluster stages nothing."""
        return self.runner is not None

    def _run(self, argv: Sequence[str], *, input: str | None = None):
        """A command on the cluster through ssh (RemoteFiles' transfers; only when :attr:`moves_files`)."""
        if self.runner is None:
            raise AdapterError(f"{self.name}: no ssh (host) to run {argv[0]} there")
        return self.runner.run(argv, input=input)

    @property
    def output_dir(self) -> str:
        folder = expand_home(self.config.get("output_dir") or "~", self.home).rstrip("/") or "/"
        return folder if folder.startswith("/") else f"{self.home}/{folder}"

    def _listing(self) -> list[Task]:
        """Every task of this user's cigri arrays that slurmctld still holds, from the full listing (every
        job of every user, ended ones included): only what the memory cannot answer comes here. The
        memory learns every array it shows."""
        tasks = tasks_of(listed(self._slurm("GET", "jobs").get("jobs")), self.user)
        arrays: dict[int, list[Task]] = {}
        for task in tasks:
            arrays.setdefault(task.array_id, []).append(task)
        now = self.clock.now()
        self._memory.note_start()
        for array_id, its in arrays.items():
            self._reads[array_id] = (now, its)
            self._learn(array_id, its)
        self._activity.seen(task.remote_id for task in tasks if task.live)
        self._memory.save()
        return tasks

    def _arrays(self, array_ids: Iterable[int], *, fresh: bool = False) -> dict[int, list[Task]]:
        """The tasks of each array, one ``GET job/<array id>`` each (a read less than LISTING_TTL old serves
        again, unless ``fresh``); none for an array slurmctld no longer holds."""
        now = self.clock.now()
        out = {}
        for array_id in sorted(set(array_ids)):
            cached = self._reads.get(array_id)
            if fresh or cached is None or now - cached[0] > LISTING_TTL:
                answer = self._slurm("GET", f"job/{array_id}", gone_ok=True)
                tasks = [t for t in tasks_of(listed(answer.get("jobs")), self.user) if t.array_id == array_id]
                cached = self._reads[array_id] = (now, tasks)
                self._learn(array_id, tasks)
                self._activity.seen((t.remote_id for t in tasks if t.live), within=f"{array_id}_")
            out[array_id] = cached[1]
        self._memory.save()
        return out

    def _learn(self, array_id: int, tasks: list[Task]) -> None:
        """What a read shows of an array, for the memory: its batch, and whether it may still run."""
        if tasks:
            count = max(task.count for task in tasks)
            self._memory.note(array_id, key=tasks[0].name, tasks=count, live=any(task.live for task in tasks))
        elif self._memory.find_array(array_id):
            self._memory.note(array_id, live=False)

    def _live_tasks(self) -> list[Task]:
        """The tasks of the arrays the memory holds live (of the full listing while there is no memory)."""
        if not self._memory.load():
            return self._listing()
        return [task for tasks in self._arrays(self._memory.live()).values() for task in tasks]

    def _job(self, batch_key: str, specs: Sequence[JobSpec]) -> dict:
        """The ``job`` part of the submission: slurm.batch_options said as slurmrestd fields."""
        spec = specs[0]
        job: dict = {
            "name": batch_key,
            "array": f"1-{len(specs)}",
            "comment": f"cigri batch of {len(specs)} tasks",
            "time_limit": max(1, math.ceil(spec.walltime / 60)),
            "standard_output": f"{self.output_dir}/cigri-%A_%a.out",
            "standard_error": f"{self.output_dir}/cigri-%A_%a.err",
        }
        for option in batch_options(spec, self.config, self.home, f"clusters.{self.name}"):
            flag, _, value = option.partition("=")
            if flag == "--time":
                continue
            if flag not in FIELDS:
                raise AdapterError(f"{self.name}: slurm-rest has no job field for the sbatch option {option}")
            field, kind = FIELDS[flag]
            job[field] = kind(value)
        environment = {"PATH": PATH, "HOME": self.home, "USER": self.user, "LOGNAME": self.user}
        # v0.0.37/38 take a dictionary, v0.0.39 a list of NAME=value
        job["environment"] = [f"{k}={v}" for k, v in environment.items()] if self.api == "v0.0.39" else environment
        return job

    # ---- the contract ---------------------------------------------------------------------------

    def check(self, settings: dict, path: str) -> None:
        resource_options(settings["resources"], f"{path}.resources", f"the Slurm cluster {self.name!r}")
        constraint(settings.get("properties") or "", f"{path}.properties")
        grouping = next((k for k in ("temporal_grouping", "dimensional_grouping") if settings.get(k)), None)
        if grouping and self.runner is None:
            raise JdlError(f"{path}.{grouping}", f"packed jobs on {self.name!r} need ssh (host) to read their status")

    def capacity(self) -> Capacity:
        total = used = down = 0
        for node in self._nodes():
            cpus, allocated = max(0, number(node.get("cpus")) or 0), max(0, number(node.get("alloc_cpus")) or 0)
            state = first_word(node.get("state")).lower()
            flags = {str(f).upper() for f in listed(node.get("state_flags"))}
            if isinstance(node.get("state"), list):
                flags |= {str(f).upper() for f in node["state"][1:]}
            usable = state not in ("down", "error", "future", "unknown") and not flags & {"DRAIN", "FAIL"}
            total += cpus if usable else allocated  # as sinfo's %C: all but "other" (down, drained)
            down += 0 if usable else max(0, cpus - allocated)
            used += allocated
        grid_used = queued = 0
        for task in self._live_tasks():
            if task.state == "RUNNING":
                grid_used += task.cpus
            elif task.state == "PENDING":
                queued += 1
        return Capacity(total=total, used=used, grid_used=grid_used, queued=queued, down=down)

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        if not check_batch(self.name, specs, self.max_batch):
            return []

        def payload() -> dict:  # for the version in use (the environment's form depends on it)
            return {
                "job": self._job(batch_key, specs),
                "script": job_script(specs[0], self.home, args_printer(specs, self.home), f"{self.output_dir}/cigri-"),
            }

        answer = self._slurm("POST", "job/submit", payload, refused=SubmitError, what="the batch")
        array_id = answer.get("job_id")
        if type(array_id) is not int or array_id < 1:
            raise SubmitError(f"{self.name} refused the batch: {error_text(answer) or 'the answer holds no job id'}")
        self._memory.note(array_id, key=batch_key, tasks=len(specs), at=self.clock.now(), live=True)
        self._memory.save()
        remote_ids = [f"{array_id}_{i}" for i in range(1, len(specs) + 1)]
        self._activity.submitted(remote_ids)
        return remote_ids

    def find_batch(self, batch_key: str) -> list[str] | None:
        """From the memory; else from the full listing (a batch whose submission's answer was lost)."""
        found = self._memory.find(batch_key)
        if found is None:
            self._listing()
            found = self._memory.find(batch_key)
        if found is None or found[1] < 1:
            return None
        array_id, count = found
        return [f"{array_id}_{i}" for i in range(1, count + 1)]

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        out = {rid: RemoteStatus(rid, RemoteState.UNKNOWN) for rid in remote_ids}
        arrays = self._arrays(array_id for rid in remote_ids if (array_id := array_of(rid)) is not None)
        for task in (task for tasks in arrays.values() for task in tasks):
            if task.remote_id in out:
                remote, code, why = translate(task.state, task.raw_exit, task.reason)
                ended = remote in (RemoteState.EXITED, RemoteState.KILLED)
                started = task.started if remote == RemoteState.RUNNING or ended else None
                cause = ended_by_slurm(task.state, remote)
                out[task.remote_id] = RemoteStatus(
                    task.remote_id, remote, code, started, task.ended if ended else None, why, cause=cause
                )
        self._activity.reported(out.values())
        return out

    def cancel(self, remote_ids: Sequence[str]) -> None:
        """One DELETE per array all of whose live tasks go, else one per task; tasks already over are left."""
        wanted: dict[int, set[int]] = {}
        for rid in remote_ids:
            array_id = array_of(rid)
            if array_id is not None:
                wanted.setdefault(array_id, set()).add(int(rid.partition("_")[2]))
        if not wanted:
            return
        self._activity.cancelled(remote_ids)
        live: dict[int, set[int]] = {}
        for array_id, tasks in self._arrays(wanted, fresh=True).items():
            for task in tasks:
                if translate(task.state)[0] in (RemoteState.PENDING, RemoteState.RUNNING, RemoteState.UNKNOWN):
                    live.setdefault(array_id, set()).add(task.index)
        for array_id in wanted:
            self._reads.pop(array_id, None)  # changed by what follows
        for array_id, indices in wanted.items():
            going = live.get(array_id, set())
            whole = going and going <= indices
            for target in [str(array_id)] if whole else [f"{array_id}_{i}" for i in sorted(going & indices)]:
                self._change("DELETE", target, None, f"to cancel {target}")

    def hold(self, remote_ids: Sequence[str]) -> None:
        """One update per task, ``{"hold": true}`` (priority 0, Reason=JobHeldUser): slurmrestd takes no
        list of ids, and an array id would hold the tasks cigri did not ask for too."""
        self._set_hold(remote_ids, True)

    def release(self, remote_ids: Sequence[str]) -> None:
        self._set_hold(remote_ids, False)

    def _set_hold(self, remote_ids: Sequence[str], hold: bool) -> None:
        what = "to hold" if hold else "to release"
        for rid in remote_ids:
            self._reads.pop(array_of(rid), None)  # changed by what follows
            self._change("POST", rid, {"hold": hold}, f"{what} {rid}")

    def _change(self, method: str, target: str, payload: dict | None, what: str) -> None:
        """A kill or an update of ``job/<target>``: a job gone is no error, and neither is an error without
        a number (22.05 tells of an update that worked so); any other is, inside an HTTP 200 answer too."""
        answer = self._slurm(method, f"job/{target}", payload, refused=AdapterError, what=what, gone_ok=True)
        if error_numbers(answer) - UPDATED_OR_GONE:
            raise AdapterError(f"{self.name} refused {what}: {error_text(answer)}")

    # packing (cigri.adapters.packing): packed jobs' files beside the RM jobs' outputs, read through ssh
    def pack_dir(self) -> str:
        return f"{self.output_dir}/cigri-packed"

    def _pack_stdout(self, remote_id: str) -> str:
        return f"{self.output_dir}/cigri-{remote_id}.out"

    def _pack_run(self, argv: Sequence[str]):
        return self.runner.run(argv)

    def node_cores(self) -> int:
        cores = [cpus for node in self._nodes() if (cpus := number(node.get("cpus")) or 0) > 0]
        if not cores:
            raise AdapterError(f"{self.name}: slurmrestd lists no node with cores")
        return min(cores)

    def _nodes(self) -> list[dict]:
        """The nodes slurmrestd lists (of the configured partition), each a JSON object."""
        partition = self.config.get("partition")
        return [
            node
            for node in listed(self._slurm("GET", "nodes").get("nodes"))
            if isinstance(node, dict) and (not partition or partition in listed(node.get("partitions")))
        ]

    def details(self, remote_id: str) -> dict:
        """slurmrestd's record of the task (``GET job/<array id>``, the task's own)."""
        array_id, index = array_of(remote_id), whole(remote_id.partition("_")[2])
        if array_id is None or index is None:
            raise AdapterError(f"{self.name}: {remote_id!r} is not an array task's id")
        answer = self._slurm("GET", f"job/{array_id}", gone_ok=True)
        for job in listed(answer.get("jobs")):
            if not isinstance(job, dict) or number(job.get("array_job_id")) != array_id:
                continue
            task = number(job.get("array_task_id"))
            pending = task_indices(str(job.get("array_task_string") or "")) if task is None else [task]
            if index in pending:
                return job
        raise AdapterError(f"{self.name}: Slurm no longer holds job {remote_id} (slurmctld forgets ended jobs)")

    def tail(self, remote_id: str, stream: str, lines: int) -> str:
        if self.runner is None:
            return _UNAVAILABLE.format(stream=stream)
        path = f"{self.output_dir}/cigri-{remote_id}.{'out' if stream == 'stdout' else 'err'}"
        argv = ["tail", "-n", str(lines), path] if lines else ["cat", path]
        result = self.runner.run(argv)
        return result.stdout.rstrip("\n") if result.ok else ""

    def activity(self) -> object:
        """A probe reads the arrays of the tasks cigri saw live, one request each (what the next pass
        would read, and then shares)."""
        return self._activity.token(self._probe)

    def _probe(self) -> None:
        self._arrays({array_id for rid in self._activity.live if (array_id := array_of(rid)) is not None}, fresh=True)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.runner is not None:
            self.runner.close()
