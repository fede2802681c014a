"""The OAR REST API of a contract cluster (``OarState``), as OAR 2.5's "oarapi" or OAR 3's FastAPI documents it.

OAR 2.5 (``flavour="2.5"``, docs/source/user/api.rst of oar-team/oar)::

    GET  resources[/details|/full]          collection of resources
    GET  jobs[/details][?state=&array=&ids=a:b:c&user=]   collection (queued jobs only without a filter)
    GET  jobs/<id>[/details]                one job, with its events
    POST jobs                               {resource|resources, command, param_file, type, name, directory,
                                            workdir, property, project} -> {id, cmd_output, links}, 201; every
                                            value but the param file goes through the shells of oarapi.pl's
                                            oarsub command line (see ``through_oarapi``), as on the real OAR
    DELETE jobs/<id>, POST jobs/<id>/deletions/new, POST jobs/<id> {"method": "delete"}
    POST jobs/<id>/holds/new, POST jobs/<id>/resumptions/new, POST jobs/<id> {"method": "hold"|"resume"}
                                            {id, cmd_output, status}; a refusal is HTTP 400 titled "Oar error"
                                            (the real 2.5.9's answer when the command it runs fails)
    GET  media/<path>[?tail=N]              a job's stdout/stderr file ("~" is the user's home)
    POST media[/force]/<path>               upload (application/octet-stream), making the missing folders; 403
                                            if the file exists and ``force`` is not given -> 201
    POST media/chmod/<path> {"mode"}        the mode of a file -> 202; 404 if there is none
    GET  stress_factor                      {"GLOBAL_STRESS": "<value>"}
    GET  version                            {oar_version, api_version, apilib_version, api_timezone, ...}

OAR 3 (``flavour="3"``, oar/api/routers/*.py of oar-team/oar3)::

    GET  jobs[?details=1&array=&job_ids=..&states=..&user=]   {items, total, offset, links}
    GET  jobs/<id>[?details=true]; POST jobs -> {id}; DELETE jobs/<id>, POST|DELETE jobs/<id>/deletions/new
    POST jobs/<id>/<hold|holds>/new, POST jobs/<id>/resumptions/new -> {id, cmd_output, exit_status} (HTTP 200,
    exit_status 1 when refused)
    GET  resources[?detailed=true]; GET media?path_filename=..&tail=N; GET stress_factor
    GET  version -> {oar_server_version, oar_version, oar_lib_version, api_version, apilib_version}
    POST media[?force=true] (multipart/form-data, its ``file`` named by its path) -> 200; "/" is put before the
    path and "~" is not the home (its expansion is lost in oar/api/routers/media.py), no folder is made, and a
    file whose folder is missing is silently not written (the API does not wait for its ``cat``)
    POST media/chmod?path_filename=..&mode=.. -> 202; 404 if there is no such file

Collections take ``limit`` and ``offset`` (``page_size`` by default) and give ``self``/``next``/``previous``
links. Errors are OAR 2.5's ``{"title", "message", "code"}`` or FastAPI's ``{"detail"}``.

Authentication: ``auth="ident"`` wants the user in ``ident_header`` (the TLS client certificate of a real
deployment is out of scope); ``auth="bearer"`` wants ``Authorization: Bearer <token>`` (any token when ``token``
is None) and runs as ``user``. Without them every endpoint answers 401.

Faults for the adapters' tests: ``fail_next(status, count)``, ``hang_next(count)`` (no answer for
``hang_seconds``, then the connection is closed), ``stress(factor)``; a submission of more than
``max_param_lines`` jobs or a body over ``max_body_bytes`` gets 413 (as the web server in front of OAR does).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from .contract import FINAL_STATES, OarError, OarState, param_lines, public_job

FLAVOURS = ("2.5", "3")
AUTHS = ("ident", "bearer")


OARSUB_STUB = "printf '%s\\0'"  # stands for oarsub in oarapi's command line: prints the words oarsub would get


def _oarapi_quoted(value: str) -> str:
    """oarapi.pl's escaping of double quotes (``s/(\\*)"/$1$1\\"/g``): the backslashes before one doubled."""
    return re.sub(r'(\\*)"', lambda m: m.group(1) * 2 + '\\"', value)


def through_oarapi(fields: dict, home: str) -> dict:
    """The fields of a submission as oarsub gets them from OAR 2.5's API (oarapi.pl, POST jobs, as the real
    2.5.9 runs it): each value but the param file between double quotes on an ``oarsub`` command line, the
    home put for the command's first ``/~/``, that line in ``bash -c "cd HOME && ..."``, ``$`` and backquotes
    escaped for the outer shell only, the whole run by ``/bin/sh``. Here oarsub is a printer of its words, run
    with ``home`` as $HOME: the user's shell expands what the real one would (and runs what it would)."""
    line = OARSUB_STUB + " "
    command = ""
    for key, value in fields.items():
        if key == "param_file":
            continue
        if key == "command":
            command = f' "{_oarapi_quoted(str(value))}"'.replace("/~/", f"{home}/", 1)
            continue
        for item in value if isinstance(value, list) else [value]:
            text = _oarapi_quoted(str(item))
            line += f" --{key}" + (f'="{text}"' if text != "" else "")
    line = _oarapi_quoted(line + command)
    outer = f'bash --noprofile --norc -c "cd {home if os.path.isdir(home) else "/"} && {line}"'
    outer = re.sub(r"(\\*)([`$])", lambda m: m.group(1) * 2 + "\\" + m.group(2), outer)
    ran = subprocess.run(["/bin/sh", "-c", outer], capture_output=True, env={**os.environ, "HOME": home}, check=False)
    if ran.returncode:
        raise _HttpError(400, f"Oarsub command exited with status {ran.returncode}: {ran.stderr.decode()[:200]}")
    words = ran.stdout.decode().split("\0")[:-1]
    received: dict = {"param_file": fields["param_file"]} if "param_file" in fields else {}
    if command:
        received["command"] = words.pop()
    for word in words:
        key, _, value = word.removeprefix("--").partition("=")
        if isinstance(fields.get(key), list):
            received.setdefault(key, []).append(value)
        else:
            received[key] = int(value) if isinstance(fields.get(key), int) else value
    return received


class _HttpError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, title: str = ""):
        super().__init__(message)
        self.status = status
        self.headers = headers or {}
        self.title = title


class OarServer:
    def __init__(
        self,
        state_path,
        flavour: str = "2.5",
        auth: str = "ident",
        token: str | None = None,
        ident_header: str = "X_REMOTE_IDENT",
        page_size: int = 100,
        user: str = "cigritest",
        max_param_lines: int = 1000,
        max_body_bytes: int = 1_000_000,
        hang_seconds: float = 5.0,
    ):
        if flavour not in FLAVOURS:
            raise ValueError(f"unknown flavour {flavour!r}: valid are {', '.join(FLAVOURS)}")
        if auth not in AUTHS:
            raise ValueError(f"unknown auth {auth!r}: valid are {', '.join(AUTHS)}")
        self.state = OarState(state_path)
        self.flavour = flavour
        self.auth = auth
        self.token = token
        self.ident_header = ident_header
        self.page_size = page_size
        self.user = user
        self.max_param_lines = max_param_lines
        self.max_body_bytes = max_body_bytes
        self.hang_seconds = hang_seconds
        self.requests: list[tuple[str, str]] = []
        self.stress_factor = 0.0
        self._faults: list[int | None] = []  # an HTTP status to answer with, or None: hang
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.errors: list[BaseException] = []  # what handlers raised, instead of tracebacks on stderr
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life ----------------------------------------------------------------------------------------------------
    def start(self) -> str:
        """Serve on 127.0.0.1 on an ephemeral port, in a thread; the base URL."""
        handler = type("OarHandler", (_Handler,), {"oar": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.oar = self
        self._released.clear()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="oar-contract", daemon=True
        )
        self._thread.start()
        return self.url

    @property
    def url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def stop(self) -> None:
        self._released.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        # a client that gave up (a timeout the test provoked) breaks the pipe; anything else is a bug here
        bugs = [exc for exc in self.errors if not isinstance(exc, ConnectionError)]
        if bugs:
            raise AssertionError(f"the contract server failed while handling a request: {bugs[0]!r}") from bugs[0]

    def __enter__(self) -> OarServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- faults --------------------------------------------------------------------------------------------------
    def hold(self, seconds: float) -> None:
        """Hold a handler ``seconds`` long, or until the server stops."""
        self._released.wait(seconds)

    def fail_next(self, status: int = 500, count: int = 1) -> None:
        with self._lock:
            self._faults.extend([status] * count)

    def hang_next(self, count: int = 1) -> None:
        with self._lock:
            self._faults.extend([None] * count)

    def stress(self, factor: float) -> None:
        self.stress_factor = factor

    def _next_fault(self) -> tuple[bool, int | None]:
        with self._lock:
            if not self._faults:
                return False, None
            return True, self._faults.pop(0)

    # -- answers -------------------------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, list[str]], headers, body: bytes):
        """(status, content type, body bytes) of one authenticated request."""
        user = self._authenticate(headers)
        for suffix in (".json", ".yaml", ".html"):
            path = path.removesuffix(suffix)
        parts = [p for p in path.split("/") if p]
        if method == "GET" and parts == ["version"]:
            return _json(200, VERSIONS[self.flavour])
        if method == "POST" and parts[:1] == ["media"]:
            return self._upload(parts[1:], query, user, body, headers.get("Content-Type") or "")
        route = self._route_25 if self.flavour == "2.5" else self._route_3
        return route(method, parts, query, user, body)

    def _authenticate(self, headers) -> str:
        if self.auth == "ident":
            user = headers.get(self.ident_header)
            if not user:
                raise _HttpError(401, f"no {self.ident_header} header: the user is not authenticated")
            return user
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme.lower() != "bearer" or not token or (self.token is not None and token != self.token):
            raise _HttpError(401, "Could not validate credentials", {"WWW-Authenticate": "Bearer"})
        return self.user

    def _route_25(self, method, parts, query, user, body):
        now = int(self.state.now)
        if method == "GET" and parts[:1] == ["resources"] and parts[1:] in ([], ["details"], ["full"]):
            items = [{**self._resource(r, "/resources"), "api_timestamp": now} for r in self.state.resources()]
            return _json(200, self._collection(items, query, "/" + "/".join(parts), now))
        if method == "GET" and parts in (["jobs"], ["jobs", "details"]):
            detailed = len(parts) == 2
            jobs = self._select_jobs(
                user,
                states=_split(query, "state", ","),
                array=_first(query, "array"),
                ids=_split(query, "ids", ":"),
                owner=_first(query, "user"),
            )
            # OAR 2.5.9's listing leaves array_index null (GET jobs/<id> gives it)
            items = [
                {**self._job(j, now, True), "array_index": None} if detailed else self._short_job(j, now) for j in jobs
            ]
            return _json(200, self._collection(items, query, "/" + "/".join(parts), now))
        if parts[:1] == ["jobs"] and len(parts) >= 2 and parts[1].isdigit():
            job_id = int(parts[1])
            if method == "GET" and parts[2:] in ([], ["details"]):
                return _json(200, self._job(self._get(job_id), now, detailed=len(parts) == 3))
            deleting = (method == "DELETE" and len(parts) == 2) or (
                method == "POST" and parts[2:] == ["deletions", "new"]
            )
            request = parts[2] if method == "POST" and parts[3:] == ["new"] else None
            if method == "POST" and len(parts) == 2:
                request = _body(body).get("method")
                deleting = request == "delete"
            if request in ("holds", "hold", "resumptions", "resume"):
                holding = request.startswith("hold")
                try:
                    output = self._hold_or_resume(job_id, holding)
                except _HttpError as exc:  # oarapi (2.5.9): the command it ran failed, a 400 "Oar error"
                    command = "oarhold" if holding else "oarresume"
                    raise _HttpError(
                        400,
                        f"Oar command exited with status 256: {exc}. (Command was: oardodo {command}  {job_id}).",
                        title="Oar error",
                    ) from exc
                status = f"{'Hold' if holding else 'Resume'} request registered"
                return _json(200, {"api_timestamp": now, "cmd_output": output, "id": job_id, "status": status})
            if deleting:
                output = self._delete(job_id)
                return _json(
                    200,
                    {"api_timestamp": now, "cmd_output": output, "id": job_id, "status": "Delete request registered"},
                )
        if method == "POST" and parts == ["jobs"]:
            ids = self._submit(user, body)
            lines = [f"OAR_JOB_ID={i}" for i in ids] + ([f"OAR_ARRAY_ID={ids[0]}"] if len(ids) > 1 else [])
            answer = {
                "api_timestamp": now,
                "cmd_output": "\n".join(lines) + "\n",
                "id": ids[0],
                "links": [{"href": f"/jobs/{ids[0]}", "rel": "self"}],
            }
            return _json(201, answer)
        if method == "GET" and parts[:1] == ["media"] and len(parts) > 1:
            return self._media(user, "/".join(parts[1:]), _first(query, "tail"))
        if method == "GET" and parts == ["stress_factor"]:
            return _json(200, {"api_timestamp": now, "GLOBAL_STRESS": str(self.stress_factor)})
        raise _HttpError(404, f"no such resource: {method} /{'/'.join(parts)}")

    def _route_3(self, method, parts, query, user, body):
        now = int(self.state.now)
        if method == "GET" and parts == ["jobs"]:
            jobs = self._select_jobs(
                user,
                states=_split(query, "states", ","),
                array=_first(query, "array"),
                ids=_split(query, "job_ids", ","),
                owner=_first(query, "user"),
            )
            detailed = bool(_first(query, "details"))
            items = [self._job(j, now, detailed, links=False) for j in jobs]
            return _json(200, self._collection(items, query, "/jobs", None, default_limit=self.page_size))
        if parts[:1] == ["jobs"] and len(parts) >= 2 and parts[1].isdigit():
            job_id = int(parts[1])
            if method == "GET" and len(parts) == 2:
                detailed = (_first(query, "details") or "").lower() in ("1", "true")
                return _json(200, self._job(self._get(job_id), now, detailed, links=False))
            if (method == "DELETE" and len(parts) == 2) or (
                method in ("POST", "DELETE") and parts[2:] == ["deletions", "new"]
            ):
                output = self._delete(job_id)
                return _json(200, {"id": job_id, "cmd_output": output, "exit_status": 0})
            if method == "POST" and parts[3:] == ["new"] and parts[2] in ("hold", "holds", "resumptions"):
                try:  # OAR 3 answers what oarhold/oarresume said, and their exit status
                    output, code = self._hold_or_resume(job_id, parts[2] != "resumptions"), 0
                except _HttpError as exc:
                    output, code = f"[ERROR] {exc}", 1
                return _json(200, {"id": job_id, "cmd_output": output, "exit_status": code})
        if method == "POST" and parts == ["jobs"]:
            return _json(200, {"id": self._submit(user, body)[0]})
        if method == "GET" and parts == ["resources"]:
            items = [self._resource(r, None) for r in self.state.resources()]
            return _json(200, self._collection(items, query, "/resources", None))
        if method == "GET" and parts == ["media"]:
            path = _first(query, "path_filename")
            if not path:
                raise _HttpError(422, "path_filename is required")
            return self._media(user, path, _first(query, "tail"))
        if method == "GET" and parts == ["stress_factor"]:
            links = [{"rel": "rel", "href": "/stress_factor"}]
            return _json(200, {"GLOBAL_STRESS": str(self.stress_factor), "links": links})
        raise _HttpError(404, "Not Found")

    # -- pieces --------------------------------------------------------------------------------------------------
    def _upload(self, parts: list[str], query, user: str, body: bytes, content_type: str):
        """POST media...: a file written, or its mode changed, as each flavour does it."""
        if self.flavour == "2.5":
            verb = parts[0] if parts and parts[0] in ("chmod", "force") else ""
            path = "/" + "/".join(unquote(part) for part in parts[1 if verb else 0 :])
            path = path.replace("/~/", f"{self.state.home(user)}/", 1) if path.startswith("/~/") else path
            if verb == "chmod":
                return self._chmod(path, str(_body(body).get("mode") or ""), 202)
            if content_type != "application/octet-stream":
                raise _HttpError(406, f"{content_type} not allowed for file upload")
            self._write(path, body, force=verb == "force", make_folders=True)
            return _json(201, {"status": "created", "success": "true", "links": [{"rel": "self", "href": path}]})
        if parts == ["chmod"]:
            return self._chmod(
                "/" + (_first(query, "path_filename") or "").lstrip("/"), _first(query, "mode") or "", 202
            )
        if parts:
            raise _HttpError(404, "Not Found")
        name, content = _multipart_file(content_type, body)
        force = (_first(query, "force") or "").lower() in ("1", "true")
        self._write("/" + name.lstrip("/"), content, force=force, make_folders=False)
        return _json(200, {"status": "created", "success": "true", "links": [{"rel": "rel", "href": "/media/" + name}]})

    def _write(self, path: str, content: bytes, force: bool, make_folders: bool) -> None:
        try:
            self.state.upload(path, content.decode(), force=force, make_folders=make_folders)
        except OarError as exc:
            raise _HttpError(exc.status, str(exc)) from exc

    def _chmod(self, path: str, mode: str, status: int):
        if not mode.isalnum():
            raise _HttpError(400, f"Bad mode value: {mode}")
        try:
            self.state.chmod(path, mode)
        except OarError as exc:
            raise _HttpError(exc.status, str(exc)) from exc
        return status, "application/octet-stream", b""

    def _get(self, job_id: int) -> dict:
        try:
            return self.state.job(job_id)
        except OarError as exc:
            raise _HttpError(exc.status, str(exc)) from exc

    def _delete(self, job_id: int) -> str:
        try:
            return self.state.delete(job_id)
        except OarError as exc:
            raise _HttpError(exc.status, str(exc)) from exc

    def _hold_or_resume(self, job_id: int, holding: bool) -> str:
        try:
            return self.state.hold(job_id) if holding else self.state.resume(job_id)
        except OarError as exc:
            raise _HttpError(exc.status, str(exc)) from exc

    def _select_jobs(self, user, states, array, ids, owner) -> list[dict]:
        jobs = self.state.jobs()
        if ids:
            wanted = {int(i) for i in ids}
            jobs = [j for j in jobs if j["id"] in wanted]
        if array:
            jobs = [j for j in jobs if j["array_id"] == int(array)]
        if owner:
            jobs = [j for j in jobs if j["owner"] == owner]
        if states:
            jobs = [j for j in jobs if j["state"] in states]
        elif not ids and not array:
            jobs = [j for j in jobs if j["state"] not in FINAL_STATES]
        return jobs

    def _submit(self, user: str, body: bytes) -> list[int]:
        if len(body) > self.max_body_bytes:
            raise _HttpError(413, f"Request Entity Too Large: {len(body)} bytes over {self.max_body_bytes}")
        fields = _body(body)
        if self.flavour == "2.5":
            fields = through_oarapi(fields, self.state.home(user))
        command = fields.get("command")
        if not command:
            raise _HttpError(400 if self.flavour == "2.5" else 422, "a command is required")
        params = None
        if fields.get("param_file") is not None:
            params = param_lines(str(fields["param_file"]))
            if len(params) > self.max_param_lines:
                raise _HttpError(413, f"Request Entity Too Large: {len(params)} jobs over {self.max_param_lines}")
        types = fields.get("type") or []
        types = [types] if isinstance(types, str) else list(types)
        try:
            return self.state.submit(
                owner=user,
                command=command,
                resources=fields.get("resource") or fields.get("resources"),
                params=params,
                types=types,
                name=fields.get("name"),
                directory=fields.get("directory") or fields.get("workdir"),
                properties=fields.get("property"),
                project=fields.get("project"),
                initial_request=f"oarapi POST /jobs {json.dumps(fields)[:200]}",
            )
        except OarError as exc:
            raise _HttpError(exc.status, str(exc)) from exc

    def _media(self, user: str, path: str, tail: str | None):
        if path.startswith("~"):
            path = self.state.home(user) + path[1:]
        if not path.startswith("/"):
            path = "/" + path
        try:
            text = self.state.read_file(path)
        except OarError as exc:
            raise _HttpError(404, str(exc)) from exc
        if tail and int(tail) > 0:
            text = "".join(text.splitlines(keepends=True)[-int(tail) :])
        return 200, "application/octet-stream", text.encode()

    def _short_job(self, job: dict, now: int) -> dict:
        keys = ("id", "name", "owner", "queue", "state")
        short = {key: job[key] for key in keys}
        short.update(submission=job["submission_time"], api_timestamp=now, links=self._job_links(job["id"]))
        return short

    def _job(self, job: dict, now: int | None, detailed: bool, links: bool = True) -> dict:
        view = public_job(job)
        del view["assigned_resources"]
        if now is not None and self.flavour == "2.5":
            view["api_timestamp"] = now
        if links:
            view["links"] = self._job_links(job["id"])
        if detailed:
            by_id = {r["resource_id"]: r for r in self.state.resources()}
            view["resources"] = [
                {"id": r, "status": "assigned", "links": [{"href": f"/resources/{r}", "rel": "self"}]}
                for r in job["assigned_resources"]
            ]
            addresses = sorted({by_id[r]["network_address"] for r in job["assigned_resources"]})
            view["nodes"] = [{"network_address": a, "status": "assigned"} for a in addresses]
        return view

    @staticmethod
    def _job_links(job_id: int) -> list[dict]:
        return [
            {"href": f"/jobs/{job_id}", "rel": "self"},
            {"href": f"/jobs/{job_id}/resources", "rel": "collection", "title": "resources"},
            {"href": f"/jobs/{job_id}/nodes", "rel": "collection", "title": "nodes"},
        ]

    @staticmethod
    def _resource(resource: dict, links_base: str | None) -> dict:
        view = dict(resource)
        if links_base is not None:
            rid = resource["resource_id"]
            view.update(
                uri=f"/resources/{rid}",
                jobs_uri=f"/resources/{rid}/jobs",
                node_uri=f"/resources/nodes/{resource['network_address']}",
            )
            view["links"] = [
                {"href": f"/resources/nodes/{resource['network_address']}", "rel": "node"},
                {"href": f"/resources/{rid}", "rel": "self"},
                {"href": f"/resources/{rid}/jobs", "rel": "jobs"},
            ]
        return view

    def _collection(self, items, query, path, now, default_limit=None) -> dict:
        limit = int(_first(query, "limit") or default_limit or self.page_size)
        offset = int(_first(query, "offset") or 0)
        kept = {k: v for k, v in query.items() if k not in ("limit", "offset")}

        def href(at: int) -> str:
            return f"{path}?{urlencode({**kept, 'limit': limit, 'offset': at}, doseq=True)}"

        links = [{"href": href(offset), "rel": "self"}]
        if offset + limit < len(items):
            links.append({"href": href(offset + limit), "rel": "next"})
        if offset > 0:
            links.append({"href": href(max(0, offset - limit)), "rel": "previous"})
        answer = {"items": items[offset : offset + limit], "total": len(items), "offset": offset, "links": links}
        if now is not None:
            answer["api_timestamp"] = now
        return answer


class _Server(ThreadingHTTPServer):
    """Records its handlers' errors rather than printing them: a late answer to a client that gave up may
    fail after its test ended, and a traceback would land on whatever ``sys.stderr`` is then, such as the
    captured output of the next test's command. Handler threads are not joined on close: keep-alive
    connections hold them until the client closes."""

    daemon_threads = True
    block_on_close = False
    oar: OarServer

    def handle_error(self, request, client_address) -> None:
        self.oar.errors.append(sys.exc_info()[1])


class _Handler(BaseHTTPRequestHandler):
    oar: OarServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args) -> None:
        """Quiet: the tests read ``OarServer.requests``."""

    def do_GET(self) -> None:
        self._answer("GET")

    def do_POST(self) -> None:
        self._answer("POST")

    def do_DELETE(self) -> None:
        self._answer("DELETE")

    def _answer(self, method: str) -> None:
        oar = self.oar
        url = urlsplit(self.path)
        oar.requests.append((method, self.path))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        injected, status = oar._next_fault()
        if injected and status is None:
            oar._released.wait(oar.hang_seconds)
            self.close_connection = True
            return
        try:
            if injected:
                raise _HttpError(status, "injected failure")
            status, content_type, payload = oar.handle(
                method, url.path, parse_qs(url.query, keep_blank_values=True), self.headers, body
            )
            extra: dict[str, str] = {}
        except _HttpError as exc:
            status, extra = exc.status, exc.headers
            content_type, payload = "application/json", json.dumps(self._error_body(exc)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _error_body(self, exc: _HttpError) -> dict:
        if self.oar.flavour == "3":
            return {"detail": str(exc)}
        return {"title": exc.title or f"ERROR {exc.status} - {exc}", "message": str(exc), "code": exc.status}


# GET /version as each flavour answers it (OAR 2.5's oarapi, OAR 3's FastAPI frontend)
VERSIONS = {
    "2.5": {"oar_version": "2.5.10", "api_version": "1.0.2", "apilib_version": "1.0.2", "api_timezone": "UTC"},
    "3": {
        "oar_server_version": "3.0.0",
        "oar_version": "3.0.0",
        "oar_lib_version": "3.0.0",
        "api_version": "1.0.2",
        "apilib_version": "1.0.2",
    },
}


def _json(status: int, data) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(data).encode()


def _body(body: bytes) -> dict:
    if not body:
        return {}
    try:
        fields = json.loads(body)
    except ValueError as exc:
        raise _HttpError(400, f"the body is not JSON: {exc}") from exc
    if not isinstance(fields, dict):
        raise _HttpError(400, "the body is not a JSON object")
    return fields


def _multipart_file(content_type: str, body: bytes) -> tuple[str, bytes]:
    """The name and content of the ``file`` field of a multipart/form-data body."""
    message = BytesParser(policy=policy.HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    for part in message.iter_parts() if message.is_multipart() else ():
        if part.get_param("name", header="content-disposition") == "file" and part.get_filename():
            return part.get_filename(), part.get_payload(decode=True) or b""
    raise _HttpError(422, "a file is required")


def _first(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _split(query: dict[str, list[str]], key: str, separator: str) -> list[str]:
    """A list parameter, repeated (``job_ids=1&job_ids=2``) and/or joined (``ids=1:2``)."""
    return [part for value in query.get(key, []) for part in value.split(separator) if part]
