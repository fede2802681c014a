"""``oar-rest``: OAR through its REST API, OAR 2.5 (``oarapi``) or OAR 3 (option ``api_flavour``).

It shares with ``oar-ssh`` the translation table and the array job (:mod:`cigri.adapters.oar`): a batch
is one array job named after the batch key, its param file the specs' quoted words, and the remote ids
come from OAR's records of that array, ordered by ``array_index``. The jobs' environment goes through the
API's media endpoints into ``~/.cigri/<batch key>.env`` (0600 before it holds anything), which their
command sources: OAR 3's API takes absolute paths only and makes no folder, so there the ``home`` option
must be set and ``~/.cigri`` must exist.

Authentication: ``auth ident`` sends the OAR login in a header (``ident_header``, default
``X_REMOTE_IDENT``), usually behind a TLS front end that wants a client certificate (``cert_file`` and
``key_file``, given to httpx); ``auth bearer`` (OAR 3) sends ``Authorization: Bearer <token>`` read from
``token_file``. ``login`` is the OAR user name of the cigri user on this cluster (default: the local
user name).

Every HTTP exchange goes through :meth:`OarRest._request`, which maps failures once: unreachable,
timeouts, TLS failures, authentication refusals (401, 403) and HTTP 5xx become :class:`TransportError`;
a submission OAR refuses (admission rules, bad property, HTTP 4xx) :class:`SubmitError`, HTTP 413 (the
batch is too large for the server) with the advice to lower ``max_batch``. No message holds a token.

A cluster whose ``stress_factor`` is at least 0.8 (CiGri's limit) gets no new jobs: its capacity shows no
free slot and its queue depth drops to 0 until it calms down; its jobs are still polled.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from ..errors import AdapterError, ConfigError, JdlError, SubmitError, TransportError
from ..model import Capacity, Cluster, JobSpec, RemoteStatus
from . import AdapterContext, Option, expand_home, http
from .oar import (
    ALL_STATES,
    OAR_OPTIONS,
    OarJob,
    array_command,
    capacity_of_resources,
    check_settings,
    checkpoint_request,
    cigri_job,
    environment_file,
    ids_by_index,
    index_of,
    job_of,
    output_path,
    shell_path,
    statuses,
    still_unmoved,
    tally,
    walltime_request,
)
from .reading import listed, one_line, whole
from .slurm import check_batch
from .transport import TIMEOUT

if TYPE_CHECKING:
    import httpx  # cigri.adapters.http imports it when a request is made

FLAVOURS = ("2.5", "3")
STRESS_LIMIT = 0.8  # CiGri's STRESS_FACTOR: a cluster this stressed gets no new jobs
IDS_PER_QUERY = 400  # job ids per bulk query, to keep URLs short
MAX_PAGES = 10_000  # a server whose pagination never ends is an error, not a hang


def read_token(path: str) -> str:
    """The bearer token in ``path``: the file's only non-blank line."""
    text = http.read_secret(path)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    token = lines[0].removeprefix("Bearer ").strip() if len(lines) == 1 else ""
    if not token or any(c.isspace() for c in token):
        raise ConfigError(f"token_file {path} holds no token (the token alone on one line)")
    return token


_BACKSLASHED = re.compile(r"(\\*)([^\\]|$)", re.S)  # a run of backslashes and the character after it


def oarapi_word(text: str, live: str = "") -> str:
    """``text`` as OAR 2.5's API (oarapi.pl, POST jobs) must be sent it for oarsub to receive it unchanged.

    oarapi puts each value between double quotes in an ``oarsub`` command line, puts that in ``bash -c "..."``
    and runs it through a shell: it escapes double quotes for both shells, but ``$`` and backquotes for the
    outer one only, so the bash that runs oarsub (as the user, from the home) expands ``$NAME``, ``$(...)`` and
    backquotes at submission time; and each shell takes a backslash from a pair. So: a run of backslashes
    before a double quote stays, before ``$`` or a backquote it is doubled and escapes it, before anything else
    it is quadrupled. oarapi also puts the home for the first ``/~/`` of a command: that one is kept out of its
    reach by an empty expansion (``$@``: that bash has no arguments). ``live``: a word (``$HOME``) left for
    that bash to expand."""
    if live:
        return live.join(oarapi_word(part) for part in text.split(live))
    if text.endswith("\\"):  # it would escape the closing quote oarapi puts after it
        raise SubmitError(f"OAR's API cannot take a value ending with a backslash: {text[-40:]!r}")

    def escaped(match: re.Match) -> str:
        backslashes, char = len(match.group(1)), match.group(2)
        if char == '"':
            return "\\" * backslashes + char
        if char in ("$", "`"):
            return "\\" * (2 * backslashes + 1) + char
        return "\\" * (4 * backslashes) + char

    return _BACKSLASHED.sub(escaped, text).replace("/~/", "/$@~/")


def error_text(response: httpx.Response) -> str:
    """OAR's explanation of an error answer, as one short line."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("message", "detail", "title", "cmd_output"):
            if data.get(key):
                return " ".join(str(data[key]).split())[:300]
    return " ".join(response.text.split())[:300]


class OarRest:
    """OAR 2.5 or OAR 3 through its REST API."""

    options = (
        Option("url", str, "the OAR API's base URL, e.g. https://oar.example.org/oarapi-priv (required)"),
        Option("api_flavour", str, "2.5 (oarapi) or 3 (OAR 3's API) (default 2.5)", choices=("2.5", "3")),
        Option("login", str, "the OAR user name of cigri's user on this cluster (default: the local user name)"),
        Option(
            "auth", str, "ident: the login in a header (default); bearer: a token (OAR 3)", choices=("ident", "bearer")
        ),
        Option("ident_header", str, "auth ident: the header carrying the login (default X_REMOTE_IDENT)"),
        Option("cert_file", str, "TLS client certificate (PEM) for the API's front end"),
        Option("key_file", str, "private key of cert_file"),
        Option("ca_file", str, "CA bundle to check the API's certificate with (default: the system's)"),
        Option("token_file", str, "auth bearer: file holding the token alone (keep it 0600)"),
        http.INSECURE,
        Option(
            "home",
            str,
            "the login's home directory on the cluster, for {HOME} and ~ in exec_directory (default: $HOME, which "
            "OAR 2.5's API expands in the job's directory, and the job's shell in its command)",
        ),
        Option("page_size", int, "records asked per page of a listing (default 500)", minimum=1),
        *OAR_OPTIONS,
    )
    best_effort = True  # OAR's besteffort job type

    def __init__(
        self,
        cluster: Cluster,
        context: AdapterContext,
        transport: httpx.BaseTransport | None = None,  # tests: an httpx.MockTransport
    ):
        self.name = cluster.name
        self.config = cluster.config
        self.clock = context.clock
        self.timeout = float(cluster.config.get("timeout") or TIMEOUT)
        self.configured_depth = int(cluster.config.get("queue_depth", 100))
        self.queue_depth = self.configured_depth
        self.stressed = False
        self.max_batch = int(cluster.config.get("max_batch", 1000))
        self.page_size = int(cluster.config.get("page_size") or 500)
        http.check_secret_url(self.name, type(self), self.config)  # before any token is read
        self.transport = transport
        self._client: httpx.Client | None = None
        self._followed: dict[str, str] = {}  # remote id -> the job OAR resubmitted it as, lately seen

    # ---- plumbing -------------------------------------------------------------------------------

    def _setting(self, key: str) -> str:
        value = self.config.get(key)
        if not value:
            raise ConfigError(f"cluster {self.name!r} (oar-rest) needs the {key} option")
        return str(value)

    @property
    def flavour(self) -> str:
        flavour = str(self.config.get("api_flavour") or "2.5")
        if flavour not in FLAVOURS:
            raise ConfigError(f"cluster {self.name!r}: api_flavour must be one of {', '.join(FLAVOURS)}")
        return flavour

    @property
    def login(self) -> str:
        return str(self.config.get("login") or getpass.getuser())

    def _headers(self) -> dict[str, str]:
        auth = str(self.config.get("auth") or "ident")
        if auth == "bearer":
            return {"Authorization": f"Bearer {read_token(self._setting('token_file'))}"}
        if auth == "ident":
            return {str(self.config.get("ident_header") or "X_REMOTE_IDENT"): self.login}
        raise ConfigError(f"cluster {self.name!r}: auth must be ident or bearer, not {auth!r}")

    @staticmethod
    def sends_secret(config: dict) -> bool:
        return config.get("auth") == "bearer"

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            url = http.check_url(
                self.name, self._setting("url"), secret=self.sends_secret(self.config), insecure=self.insecure
            )
            self.flavour  # noqa: B018 (refuses a bad api_flavour before any request)
            cert = None
            if self.config.get("cert_file"):
                cert_file = str(Path(self.config["cert_file"]).expanduser())
                key_file = self.config.get("key_file")
                cert = (cert_file, str(Path(key_file).expanduser())) if key_file else cert_file
            verify = str(Path(self.config["ca_file"]).expanduser()) if self.config.get("ca_file") else True
            self._client = http.client(
                url.rstrip("/") + "/",
                self.timeout,
                self.transport,
                headers={"Accept": "application/json", **self._headers()},
                cert=cert,
                verify=verify,
            )
        return self._client

    @property
    def insecure(self) -> bool:
        return bool(self.config.get("insecure"))

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict | None = None,
        payload: dict | None = None,
        submitting: bool = False,
        probing: bool = False,
        **upload,
    ) -> httpx.Response | None:
        """The one door to OAR's API: the answer, or a CigriError (never a secret in it).

        ``submitting``: OAR refusing the request is a SubmitError; ``probing``: HTTP 404 gives None. ``upload``:
        a body other than JSON, as httpx takes it (``content`` and ``headers``, or ``files``)."""
        url = self._setting("url")
        # the client is made inside send, which maps a TLS file it cannot read
        response = http.send(
            self.name,
            "OAR's API",
            url,
            self.timeout,
            lambda: self.client,
            method,
            path,
            params=params,
            json=payload,
            **upload,
        )
        status = response.status_code
        if status < 400:
            return response
        if status in (401, 403):
            self.close()  # the next call reads the token file again: a renewed token is taken at once
            raise TransportError(
                f"{self.name}: OAR's API refused the authentication of {self.login} (HTTP {status}): "
                "check the login, auth, ident_header, cert_file/key_file or token_file options"
            )
        if status == 404 and probing:
            return None
        text = error_text(response)
        if status == 413 and submitting:
            raise SubmitError(
                f"{self.name}: the batch is too large for OAR's API (HTTP 413): lower max_batch "
                f"(now {self.max_batch}) with `grid gridclusters set {self.name} --max-batch ...` so batches are split"
            )
        if status >= 500:
            raise TransportError(f"{self.name}: OAR's API answered HTTP {status} to {method} {path}: {text}")
        if submitting:
            raise SubmitError(f"{self.name} refused the batch (HTTP {status}): {text}")
        raise AdapterError(f"{self.name}: OAR's API answered HTTP {status} to {method} {path}: {text}")

    def _json(self, method: str, path: str, **kwargs) -> dict | None:
        response = self._request(method, path, **kwargs)
        if response is None:
            return None
        try:
            data = response.json()
        except ValueError:
            raise TransportError(f"{self.name}: OAR's API answered {method} {path} with something not JSON") from None
        return data if isinstance(data, dict) else {"items": data} if isinstance(data, list) else {}

    def _collection(self, path: str, params: dict) -> list[dict]:
        """Every item of a paginated listing (``offset``/``limit``, ``total`` or a ``next`` link)."""
        items: list[dict] = []
        offset = 0
        for _ in range(MAX_PAGES):
            page = self._json("GET", path, params={**params, "offset": offset, "limit": self.page_size}) or {}
            batch = [item for item in listed(page.get("items")) if isinstance(item, dict)]
            items.extend(batch)
            offset += len(batch)
            total = page.get("total")
            has_next = any(isinstance(link, dict) and link.get("rel") == "next" for link in listed(page.get("links")))
            if not batch or (offset >= total if isinstance(total, int) else not has_next):
                return items
        raise TransportError(f"{self.name}: OAR's API listing {path} does not end after {MAX_PAGES} pages")

    def _details(self, detailed: bool = True, **filters) -> list[OarJob]:
        """Job records with their details (``detailed``; else the short listing: id, name, state...), one
        paginated query. Filters: ids, array, user, states."""
        if self.flavour == "2.5":
            path, params = ("jobs/details" if detailed else "jobs"), {}
        else:
            path, params = "jobs", {"details": "1"} if detailed else {}
        if filters.get("ids"):
            if self.flavour == "2.5":
                params["ids"] = ":".join(filters["ids"])
            else:
                params["job_ids"] = list(filters["ids"])
        if filters.get("array"):
            params["array"] = filters["array"]
        if filters.get("user"):
            params["user"] = filters["user"]
        if filters.get("states"):
            params["state" if self.flavour == "2.5" else "states"] = ",".join(filters["states"])
        return [job for item in self._collection(path, params) if (job := job_of(item))]

    def _jobs(self, ids: Sequence[str]) -> dict[str, OarJob]:
        """The records of ``ids`` (any state), with the events of those in Error: the login's current jobs
        in one paginated listing, then, by id, only those it no longer lists (ended since the last pass),
        so that the requests follow the pages and the work done, not the number of active jobs."""
        ids = [i for i in dict.fromkeys(ids) if whole(i) is not None]
        wanted = set(ids)
        found = {job.id: job for job in self._details(user=self.login) if job.id in wanted} if ids else {}
        missing = [i for i in ids if i not in found]
        for start in range(0, len(missing), IDS_PER_QUERY):
            chunk = missing[start : start + IDS_PER_QUERY]
            asked = set(chunk)
            found.update({job.id: job for job in self._details(ids=chunk, states=ALL_STATES) if job.id in asked})
        for job_id, job in found.items():
            if job.state == "Error" and not job.has_events:  # some listings leave events out: ask the job
                item = self._json("GET", f"jobs/{job_id}", probing=True)
                found[job_id] = (job_of(item) if item else None) or job
        return found

    def _our_jobs(self) -> list[OarJob]:
        """The login's current cigri jobs (OAR lists current jobs by default)."""
        return [job for job in self._details(user=self.login) if cigri_job(job)]

    def _directory(self, directory: str) -> str | None:
        """The job's directory for OAR: None (OAR's default, the home) for the home itself when cigri
        does not know it, else with ``$HOME`` for OAR's API to replace."""
        home = self.config.get("home")
        if home:
            return expand_home(directory, str(home).rstrip("/") or "/")
        if directory.rstrip("/") in ("{HOME}", "~", "$HOME"):
            return None
        return expand_home(directory, "$HOME")

    def _array_ids(self, array_id: str, count: int) -> list[str] | None:
        return ids_by_index(self._details(array=array_id, states=ALL_STATES), array_id, count)

    # ---- the contract ---------------------------------------------------------------------------

    def check(self, settings: dict, path: str) -> None:
        check_settings(settings, path)
        if settings.get("environment") and self._environment_path("") is None:
            raise JdlError(f"{path}.environment", self._needs_home())

    def _environment_path(self, batch_key: str) -> str | None:
        """Where a batch's environment file goes, as OAR's API takes a path: OAR 2.5's puts the home for a
        leading ``~``, OAR 3's takes an absolute path only (None when the cluster's home is not set)."""
        home = str(self.config.get("home") or "").rstrip("/")
        if not home and self.flavour == "3":
            return None
        return f"{home or '~'}/.cigri/{batch_key}.env"

    def _needs_home(self) -> str:
        return (
            f"cluster {self.name!r} (OAR 3's API) gives jobs their environment in a file, at an absolute path only: "
            f"set its home option (grid gridclusters set {self.name} --home ...)"
        )

    def _stage_environment(self, path: str, text: str) -> None:
        """The jobs' environment file written through OAR's API (its media endpoints): made empty, made 0600,
        then filled, so that others can never read it while it holds anything. SubmitError when it cannot be."""
        self._upload(path, b"")
        if self.flavour == "2.5":
            target, asked = "media/chmod/" + quote(path.lstrip("/"), errors="replace"), {"payload": {"mode": "600"}}
        else:
            target, asked = "media/chmod", {"params": {"path_filename": path, "mode": "600"}}
        if self._request("POST", target, submitting=True, probing=True, **asked) is None:
            raise SubmitError(
                f"{self.name} refused the batch: cannot stage the jobs' environment in {path}: OAR's API does not find "
                "it once written (does its folder exist? OAR 3's API makes none)"
            )
        self._upload(path, text.encode())

    def _upload(self, path: str, content: bytes) -> None:
        """``content`` written to ``path`` (replacing it) through OAR's API, as the login."""
        if self.flavour == "2.5":
            target = "media/force/" + quote(path.lstrip("/"), errors="replace")
            headers = {"Content-Type": "application/octet-stream"}
            self._request("POST", target, submitting=True, content=content, headers=headers)
        else:
            upload = {"file": (path, content, "application/octet-stream")}
            self._request("POST", "media/", params={"force": "true"}, submitting=True, files=upload)

    def stress_factor(self) -> float:
        data = self._json("GET", "stress_factor", probing=True) or {}
        value = data.get("GLOBAL_STRESS", data.get("stress_factor", 0))
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            return 0.0

    def capacity(self) -> Capacity:
        stressed = self.stress_factor() >= STRESS_LIMIT
        path, params = ("resources/full", {}) if self.flavour == "2.5" else ("resources", {"detailed": "true"})
        total, used, down = capacity_of_resources(self._collection(path, params))
        # everyone's current jobs: their cores are busy, whatever the resource records say
        busy, grid_used, queued = tally(self._details(), lambda job: job.owner == self.login and cigri_job(job))
        used = max(used, busy)
        self.queue_depth = 0 if stressed else self.configured_depth
        self.stressed = stressed  # the flow's reading says so: the cluster's queue is closed
        used = total if stressed else min(used, total)
        return Capacity(total=total, used=used, grid_used=grid_used, queued=queued, down=down)

    def server_version(self) -> str:
        """OAR's and its API's versions, from ``GET version`` (grid doctor)."""
        data = self._json("GET", "version") or {}
        oar = data.get("oar_server_version") or data.get("oar_version") or "of unknown version"
        return f"OAR {oar}, API {data.get('api_version') or 'of unknown version'}"

    def details(self, remote_id: str) -> dict:
        """OAR's API's record of the job (``GET jobs/<id>``)."""
        item = self._json("GET", f"jobs/{remote_id}", probing=True) if whole(remote_id) is not None else None
        if not item:
            raise AdapterError(f"{self.name}: OAR knows no job {remote_id}")
        return item

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        if not check_batch(self.name, specs, self.max_batch):
            return []
        spec = specs[0]
        home = str(self.config.get("home") or "$HOME")  # OAR's API puts the user's home for $HOME
        env_file = None
        if (environment := environment_file(spec)) is not None:
            if (env_path := self._environment_path(batch_key)) is None:
                raise SubmitError(f"{self.name} refused the batch: {self._needs_home()}")
            self._stage_environment(env_path, environment)
            env_file = shell_path(f"~/.cigri/{batch_key}.env", home)
        command, params = array_command(specs, home, env_file)
        payload: dict = {"resource": walltime_request(spec), "command": command, "name": batch_key}
        directory = self._directory(spec.directory)
        if directory is not None:
            payload["directory"] = directory
        if params is not None:
            payload["param_file"] = params
        if spec.properties.strip():
            payload["property"] = spec.properties.strip()
        if spec.project:
            payload["project"] = spec.project
        if spec.best_effort:
            payload["type"] = ["besteffort"]
        if (checkpoint := checkpoint_request(spec)) is not None:
            payload["checkpoint"], payload["signal"] = checkpoint
        if self.flavour == "2.5":  # oarapi hands every value to a shell (OAR 3's API runs no shell)
            payload = {key: self._oarapi_value(key, value) for key, value in payload.items()}
        answer = self._json("POST", "jobs", payload=payload, submitting=True) or {}
        array_id = str(answer.get("id") or "")
        if whole(array_id) is None:
            why = one_line(str(answer.get("cmd_output") or "")) or "no job id in the answer"
            raise SubmitError(f"{self.name} refused the batch: {why}")
        ids = self._array_ids(array_id, len(specs))
        if ids is None:  # the batch is there: find_batch maps it next pass
            raise TransportError(f"{self.name}: OAR does not list every job of array {array_id} yet")
        return ids

    @staticmethod
    def _oarapi_value(key: str, value: object) -> object:
        """A submission's field as OAR 2.5's API must get it (:func:`oarapi_word`): the directory keeps ``$HOME``
        for the API's shell to expand; the param file goes to a file, not through the shell."""
        if key == "param_file" or isinstance(value, int):
            return value
        if isinstance(value, list):
            return [oarapi_word(str(item)) for item in value]
        return oarapi_word(str(value), live="$HOME" if key == "directory" else "")

    def find_batch(self, batch_key: str) -> list[str] | None:
        # ended jobs too: a batch whose answer was lost may have run to its end before this pass (only a
        # batch a killed pass left is looked for, so reading the login's whole history here is rare). In the
        # short listing: OAR 2.5.9's detailed one costs ~30 ms a job. It gives no array id: the first job of
        # an array has the array's id, the smallest of its jobs (see index_of)
        named = [job.id for job in self._details(False, user=self.login, states=ALL_STATES) if job.name == batch_key]
        if not named:
            return None
        array_id = min(named, key=int)  # the first submission, should there be two
        jobs = [job for job in self._details(array=array_id, states=ALL_STATES) if job.array_id == array_id]
        return ids_by_index(jobs, array_id, max(index_of(job) for job in jobs)) if jobs else None

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        out, self._followed = statuses(remote_ids, self._jobs)
        return out

    def cancel(self, remote_ids: Sequence[str]) -> None:
        targets = [*remote_ids, *(self._followed[rid] for rid in remote_ids if rid in self._followed)]
        for job_id in dict.fromkeys(targets):
            try:
                self._request("DELETE", f"jobs/{job_id}", probing=True)  # 404: the job is gone already
            except TransportError:
                raise
            except AdapterError:  # OAR refuses to delete a job that is over: nothing is left to cancel
                continue

    def hold(self, remote_ids: Sequence[str]) -> None:
        self._hold_or_resume("hold", remote_ids)

    def release(self, remote_ids: Sequence[str]) -> None:
        self._hold_or_resume("resume", remote_ids)

    def _hold_or_resume(self, verb: str, remote_ids: Sequence[str]) -> None:
        """``POST jobs/<id>/holds/new`` or ``resumptions/new`` per job (both flavours; the job OAR resubmitted
        one as, when it did). OAR 2.5 refuses with an HTTP error (2.5.9's oarapi: 400 "Oar error" when the
        command fails), OAR 3 with a non-zero exit_status: one listing of the refused jobs then tells which were
        truly refused (and meets an outage as one). OAR takes the request, then changes the state: a job is in
        Hold, or Waiting again, a moment after the answer."""
        resource = "holds" if verb == "hold" else "resumptions"
        failed: dict[str, str] = {}
        for job_id in dict.fromkeys(self._followed.get(rid, rid) for rid in remote_ids):
            try:
                answer = self._json("POST", f"jobs/{job_id}/{resource}/new", probing=True)
            except AdapterError as exc:
                failed[job_id] = str(exc)
                continue
            if answer and answer.get("exit_status") not in (None, 0):
                failed[job_id] = one_line(str(answer.get("cmd_output") or "")) or f"exit status {answer['exit_status']}"
        refused = still_unmoved(failed, self._jobs(list(failed)), verb) if failed else []
        if refused:
            raise AdapterError(f"{self.name}: OAR refused to {verb} {len(refused)} jobs: {'; '.join(refused[:3])}")

    def tail(self, remote_id: str, stream: str, lines: int) -> str:
        """The end of a job's output through the media endpoint; "" when OAR cannot give it."""
        try:
            return self._tail(self._followed.get(remote_id, remote_id), stream, lines)
        except TransportError:
            raise
        except AdapterError:
            return ""

    def _tail(self, job_id: str, stream: str, lines: int) -> str:
        item = self._json("GET", f"jobs/{job_id}", probing=True)
        job = job_of(item) if item else None
        path = output_path(job, stream) if job else None
        if path is None:
            return ""
        params = {"tail": lines} if lines else {}
        if self.flavour == "2.5":
            # quoted: a ? or # in a file name must not end the path
            response = self._request(
                "GET", "media/" + quote(path.lstrip("/"), errors="replace"), params=params, probing=True
            )
        else:
            response = self._request("GET", "media/", params={**params, "path_filename": path}, probing=True)
        return response.text.rstrip("\n") if response is not None else ""

    def activity(self) -> object:
        return None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
