"""The commands' way to ``grid serve`` (issue 25, item 3): :class:`Client` speaks HTTP to the service, on a
Unix socket (``unix:PATH``: the service names the caller by its credentials) or at a URL (the front proxy
authenticates the user; the client sends nothing of its own); :class:`Remote` answers what the commands ask
with the records of :mod:`cigri.views`, as :class:`cigri.views.Local` does from the state file.

The service's answers become cigri's errors here, once: an error names its class in ``X-CIGRI-ERROR``
(:mod:`cigri.service.http`), so that a command exits with the code it has on the state file; without the
header, 404 is :class:`~cigri.errors.NotFound`, 403 :class:`~cigri.errors.PermissionDenied`, anything else a
:class:`~cigri.errors.CigriError`. A service that does not answer is a :class:`~cigri.errors.TransportError`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from . import errors, views
from . import jdl as jdl_mod
from .errors import CigriError, JdlError, NotFound, PermissionDenied, TransportError

ERROR_HEADER = "X-CIGRI-ERROR"  # cigri.service.http's
PAGE = 100_000  # jobs per request of gridstat -f (the service's largest page)
NOTIFY_KINDS = ("mail", "webhook")


def check_server(text: str) -> None:
    """``unix:PATH`` or an http(s) URL (ValueError saying what is expected)."""
    if text.startswith("unix:") and len(text) > 5:
        return
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"expected http://HOST:PORT[/PATH], https://... or unix:PATH, got {text!r}")


def _error_classes() -> dict[str, type[CigriError]]:
    found, todo = {}, [CigriError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found


def error_of(response: httpx.Response) -> CigriError:
    """The cigri error a refusal of the service stands for."""
    try:
        message = str(response.json()["message"])
    except (ValueError, KeyError, TypeError):
        message = f"the service answered {response.status_code} {response.reason_phrase}"
    cls = _error_classes().get(response.headers.get(ERROR_HEADER, ""))
    if cls is None:
        cls = {404: NotFound, 403: PermissionDenied}.get(response.status_code, CigriError)
    if issubclass(cls, JdlError):
        return cls("", message)  # the message names the key already
    try:
        return cls(message)
    except TypeError:  # an error of another shape: its exit code is all that matters here
        return CigriError(message)


class Client:
    """HTTP to the service, its refusals raised as cigri's errors."""

    def __init__(self, server: str, *, headers: dict | None = None, transport: httpx.BaseTransport | None = None):
        check_server(server)
        self.server = server
        if server.startswith("unix:"):
            if transport is None:
                _probe(server[5:], server)
                transport = httpx.HTTPTransport(uds=server[5:])
            base = "http://cigri"
        else:
            base = server.rstrip("/")
        self.http = httpx.Client(base_url=base, headers=headers, transport=transport, timeout=300)

    def close(self) -> None:
        self.http.close()

    def request(self, method: str, path: str, *, params: dict | None = None, body: Any = None) -> dict:
        try:
            response = self.http.request(method, path, params=params, json=body)
        except httpx.HTTPError as exc:
            raise TransportError(f"cannot reach the service at {self.server}: {exc}") from exc
        if response.status_code >= 400:
            raise error_of(response)
        try:
            return response.json()
        except ValueError as exc:
            raise CigriError(f"the service at {self.server} answered {method} {path} with no JSON") from exc

    def get(self, path: str, **params: Any) -> dict:
        return self.request("GET", path, params=_query(params))

    def delete(self, path: str, **params: Any) -> dict:
        return self.request("DELETE", path, params=_query(params))

    def post(self, path: str, body: Any) -> dict:
        return self.request("POST", path, body=body)

    def items(self, path: str, **params: Any) -> Iterator[dict]:
        """The items of a paged collection, page after page (its ``next`` links)."""
        answer = self.get(path, **params)
        while True:
            yield from answer["items"]
            following = [item["href"] for item in answer.get("links", []) if item["rel"] == "next"]
            if not following:
                return
            answer = self.request("GET", following[0])


def _probe(path: str, server: str) -> None:
    """A socket no one listens on is refused here, by a plain connection: httpx would leave its socket open."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(path)
        except OSError as exc:
            raise TransportError(f"cannot reach the service at {server}: {exc.strerror or exc}") from exc


def _query(params: dict) -> dict:
    """CiGri's flags are present or absent: True is sent as 1, False and None not at all."""
    return {key: (1 if value is True else value) for key, value in params.items() if value not in (None, False)}


def connect(server: str, *, headers: dict | None = None) -> Client:
    return Client(server, headers=headers)


class Remote:
    """What the commands ask, answered by the service (the same records as :class:`cigri.views.Local`)."""

    def __init__(self, client: Client):
        self.client = client

    # -- reading

    def campaign_rows(self, user: str | None) -> list[dict]:
        items = self.client.get("/campaigns", all=True, user=user)["items"]
        return [views.pick(item, views.CAMPAIGN_KEYS) for item in items]

    def eta_rows(self, user: str | None) -> list[dict]:
        rows = []
        for item in self.client.get("/campaigns", user=user)["items"]:
            if item["state"] == "in_treatment":
                summary = self.client.get(f"/campaigns/{item['id']}/stats")
                rows.append(views.pick(summary, views.CAMPAIGN_KEYS + views.SPRITZ_KEYS))
        return rows

    def summary(self, campaign_id: int) -> dict:
        answer = self.client.get(f"/campaigns/{campaign_id}/stats")
        answer.pop("links")
        return answer

    def check_campaign(self, campaign_id: int) -> None:
        self.client.get(f"/campaigns/{campaign_id}")

    def jdl(self, campaign_id: int) -> dict:
        return self.client.get(f"/campaigns/{campaign_id}/jdl")["jdl"]

    def job(self, job_id: int) -> dict:
        return views.pick(self.client.get(f"/jobs/{job_id}"), views.JOB_KEYS)

    def output(self, job_id: int, stream: str) -> str:
        return self.client.get(f"/jobs/{job_id}/{stream}")["output"]

    def rm_details(self, job_id: int) -> dict:
        return self.client.get(f"/jobs/{job_id}/rm")["record"]

    def job_rows(self, campaign_ids: list[int]) -> Iterator[dict]:
        for cid in campaign_ids:
            for item in self.client.items(f"/campaigns/{cid}/jobs", limit=PAGE):
                yield views.pick(item, views.JOB_ROW_KEYS)

    def campaign_ids(self, user: str | None) -> list[int]:
        return [row["id"] for row in self.campaign_rows(user)]

    def events(self, campaign_id, event_id, show_all, code, global_only) -> list[dict]:
        if event_id is not None:
            return [views.pick(self.client.get(f"/events/{event_id}"), views.EVENT_KEYS)]
        answer = self.client.get(
            "/events",
            campaign=campaign_id,
            all=show_all,
            code=None if code is None else code.value,
            **{"global": global_only},
        )
        return [views.pick(item, views.EVENT_KEYS) for item in answer["items"]]

    def cluster_rows(self) -> list[dict]:
        return [views.pick(item, views.CLUSTER_KEYS) for item in self.client.get("/clusters", ask=True)["items"]]

    def cluster_info(self, name: str) -> dict:
        return views.pick(self.client.get(f"/clusters/{name}", ask=True), views.CLUSTER_INFO_KEYS)

    def usage_rows(self) -> list[dict]:
        return [item["usage"] for item in self.client.get("/clusters")["items"]]

    def subscriptions(self) -> list[dict]:
        return self.client.get("/notifications")["items"]

    # -- changing

    def submit(self, jdl: jdl_mod.Jdl, test: bool | None, base_dir: Path) -> tuple[int, int, list[str]]:
        """(campaign id, its jobs, the warnings): the JDL sent as :func:`for_service` makes it."""
        answer = self.client.post("/campaigns", for_service(jdl, test, base_dir))
        return answer["id"], answer["total_jobs"], answer.get("warnings", [])

    def submitted(self, campaign_id: int) -> dict:
        view = self.client.get(f"/campaigns/{campaign_id}")
        return views.pick({**view, "jobs": view["total_jobs"], "jdl": self.jdl(campaign_id)}, views.SUBMITTED_KEYS)

    def add_jobs(self, campaign_id: int, extra: jdl_mod.Jdl) -> int:
        return self.client.post(f"/campaigns/{campaign_id}/jobs", list(param_lines(extra)))["added"]

    def pause(self, campaign_id: int) -> None:
        self.client.delete(f"/campaigns/{campaign_id}", hold=True)

    def resume(self, campaign_id: int) -> None:
        self.client.delete(f"/campaigns/{campaign_id}", resume=True)

    def cancel(self, campaign_id: int) -> int:
        return self.client.delete(f"/campaigns/{campaign_id}")["killed"]

    def purge(self, campaign_ids: list[int]) -> None:
        for cid in campaign_ids:
            self.client.delete(f"/campaigns/{cid}", purge=True)

    def cancel_job(self, job_id: int) -> str:
        return self.client.delete(f"/jobs/{job_id}")["result"]

    def fix_events(self, campaign_id, event_id, code, resubmit) -> tuple[int, int]:
        if event_id is not None:
            answer = self.client.delete(f"/events/{event_id}", resubmit=resubmit)
        elif campaign_id is not None:
            answer = self.client.delete(
                f"/campaigns/{campaign_id}/events", resubmit=resubmit, code=None if code is None else code.value
            )
        else:
            raise CigriError("say which events to fix: -c CAMPAIGN or an EVENT_ID")
        return answer["closed"], answer["resubmitted"]

    def subscribe(self, kind: str, target: str, severity: str) -> bool:
        return self.client.post(f"/notifications/{kind}", {"identity": target, "severity": severity})["new"]

    def unsubscribe(self, kind: str | None, target: str | None) -> int:
        """How many subscriptions went (0: none matched)."""
        removed = 0
        for name in [kind] if kind else NOTIFY_KINDS:
            try:
                removed += self.client.delete(f"/notifications/{name}", identity=target)["removed"]
            except errors.NotFound:
                continue
        return removed


def param_lines(jdl: jdl_mod.Jdl) -> Iterator[str]:
    """The param lines of a JDL's source as the state would take them (a param_file's blank lines skipped,
    their line ends dropped), read here: the service never reads this machine's files."""
    from_file = jdl.params is None and jdl.nb_jobs is None
    for _, block in jdl.param_blocks(jdl_mod.JOB_BLOCK):
        for line in block:
            if from_file:
                line = line.rstrip("\r\n")
                if not line or line.isspace():
                    continue
            yield line


def for_service(jdl: jdl_mod.Jdl, test: bool | None, base_dir: Path) -> dict:
    """The JDL as the service takes it: its ``{JDL_DIR}`` expanded here (the JDL's folder on this machine), a
    param_file read here and sent as ``params`` (as CiGri's gridsub does), gridsub -t's type in ``test_mode``.
    What else names this machine's files (data_source, output_destination...) is sent as it is: the service
    refuses it, saying so."""
    folder = str(base_dir.resolve())

    def expand(value):
        if isinstance(value, str):
            return value.replace("{JDL_DIR}", folder)
        if isinstance(value, list):
            return [expand(item) for item in value]
        if isinstance(value, dict):
            return {key: expand(item) for key, item in value.items()}
        return value

    data = {key: value if key.lower() in ("params", "name") else expand(value) for key, value in jdl.raw.items()}
    if jdl.param_file is not None:
        data = {key: value for key, value in data.items() if key.lower() != "param_file"}
        data["params"] = list(param_lines(jdl))
    if test is not None:
        data = {key: value for key, value in data.items() if key.lower() != "test_mode"}
        data["test_mode"] = test
        data["clusters"] = {
            name: {key: value for key, value in (settings or {}).items() if key.lower() != "test_mode"}
            for name, settings in data["clusters"].items()
        }
    return data
