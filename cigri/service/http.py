"""The HTTP edge of ``grid serve``: what every answer shares, and the one place where cigri's errors become
status codes.

- A :class:`Resource` is a path and its methods; its ``Allow`` header lists them, and another method is a 405
  saying so (CiGri's ``action=`` override of POST is not built: use PUT or DELETE).
- Every answer is JSON with ``links`` (``rel``, ``href``); ``?pretty`` (anything but ``false``) indents it.
  ``<``, ``>`` and ``&`` are written as JSON escapes, so that a name holding markup stays data wherever the
  answer is shown.
- Errors are ``{"message": one line, "links": ...}``, with the code CiGri documents: 404 (no such thing),
  403 (not yours, not authenticated, refused by an admission rule), 400 (anything else cigri refuses); a
  state file that fails is a 500. Messages are masked (:mod:`cigri.secrets`) as the CLI masks its lines.
  An error of cigri's tree names its class in ``X-CIGRI-ERROR`` (``JdlError``, ``NotFound``...), so that a
  command speaking to the service (:mod:`cigri.client`) exits with the code it would have on the state file.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..errors import CigriError, NotFound, PermissionDenied
from ..secrets import mask_text

log = logging.getLogger("cigri.service")

MAX_BODY = 256 * 1024 * 1024  # a JDL of a few million params; more goes in several POST /campaigns/<id>/jobs
_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


class HttpError(CigriError):
    """A request the API itself refuses (a bad query, a body that is not JSON), with its status."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class BadRequest(HttpError):
    def __init__(self, message: str):
        super().__init__(400, message)


def link(rel: str, href: str, title: str | None = None) -> dict:
    return {"rel": rel, "href": href, **({"title": title} if title else {})}


@dataclass(frozen=True)
class Call:
    """One request as a handler sees it: its store (this thread's), its user (None: anonymous), its path's
    ids, its query and its body."""

    store: Any
    user: str | None
    path: Mapping[str, Any]
    query: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class Answer:
    data: dict
    status: int = 200
    location: str | None = None
    # its JSON text by ?pretty, once made: an answer kept for several requests is encoded once
    encoded: dict[bool, bytes] = field(default_factory=dict, compare=False, repr=False)


Handler = Callable[[Call, Any], Answer]  # (the call, the service) -> the answer


def status_of(exc: Exception) -> int:
    if isinstance(exc, HttpError):
        return exc.status
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, PermissionDenied):
        return 403
    if isinstance(exc, CigriError):
        return 400
    return 500


def one_line(text: str) -> str:
    return " ".join(mask_text(text).split())


def is_pretty(query: Mapping[str, str]) -> bool:
    return "pretty" in query and query["pretty"].lower() != "false"


def encode(data: Any, pretty: bool = False) -> str:
    """JSON text as the service answers it: ``<``, ``>`` and ``&`` escaped, so that no answer reads as HTML.
    The parts of a list encoded apart, joined with ", ", give the list's text (not indented)."""
    return json.dumps(data, indent=2 if pretty else None, ensure_ascii=False).translate(_ESCAPES)


def render(
    data: dict,
    status: int,
    query: Mapping[str, str],
    allow: str | None,
    location: str | None = None,
    encoded: dict[bool, bytes] | None = None,
):
    pretty = is_pretty(query)
    body = None if encoded is None else encoded.get(pretty)
    if body is None:
        body = (encode(data, pretty) + "\n").encode()
        if encoded is not None:
            encoded[pretty] = body
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    if allow:
        headers["Allow"] = allow
    if location:
        headers["Location"] = location
    return Response(body, status_code=status, headers=headers, media_type="application/json")


ERROR_HEADER = "X-CIGRI-ERROR"


def error(
    status: int, message: str, query: Mapping[str, str], allow: str | None = None, kind: str | None = None
) -> Response:
    response = render({"message": one_line(message), "links": [link("parent", "/")]}, status, query, allow)
    if kind:
        response.headers[ERROR_HEADER] = kind
    return response


class Resource:
    """A path and its handlers by method, run in the thread pool (the store's calls block)."""

    def __init__(self, path: str, service, **handlers: Handler):
        self.path = path
        self.service = service
        self.handlers = handlers
        self.allow = ", ".join(sorted(handlers))

    async def handle(self, request: Request) -> Response:
        query = request.query_params
        handler = self.handlers.get(request.method)
        if handler is None:
            return error(
                405,
                f"{request.method} is not allowed on {self.path} (allowed: {self.allow}); CiGri's action= "
                "override is not built: use PUT or DELETE",
                query,
                self.allow,
            )
        try:
            body = await _body(request) if request.method in ("POST", "PUT") else b""
            user = self.service.identity.user(request.scope, request.headers)
            answer = await run_in_threadpool(self.service.run, handler, user, request.path_params, query, body)
        except Exception as exc:
            status = status_of(exc)
            if status == 500:
                log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
                if isinstance(exc, sqlite3.Error):
                    return error(500, f"state file: {exc}", query, self.allow, "StoreError")
                return error(500, "internal error (see the log)", query, self.allow)
            kind = type(exc).__name__ if isinstance(exc, CigriError) and not isinstance(exc, HttpError) else None
            return error(status, str(exc), query, self.allow, kind)
        return render(answer.data, answer.status, query, self.allow, answer.location, answer.encoded)


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise BadRequest(f"the body is larger than {MAX_BODY} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise BadRequest(f"the body is larger than {MAX_BODY} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def json_body(call: Call, what: str) -> Any:
    """The body as JSON (a BadRequest saying why not)."""
    try:
        return json.loads(call.body.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest(f"{what}: the body is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(f"{what}: the body is not valid JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:  # the decoder's depth is Python's: a client's [[[[... must not be a 500
        raise BadRequest(f"{what}: the body nests lists or objects too deeply") from None


def whole(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """A whole-number query parameter within [low, high]."""
    text = query.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"{name}: expected a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name}: {value} is out of range ({low} to {high})")
    return value


def flag(query: Mapping[str, str], name: str) -> bool:
    """CiGri's flags: present (whatever its value but false) is on."""
    return name in query and query[name].lower() not in ("false", "0")
