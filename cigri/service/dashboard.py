"""The web dashboard of ``grid serve`` (issue 25, item 4), at ``/dashboard``: the campaigns with their progress,
throughput, estimated end and its interval, open events, the clusters' usage, and the pictures of
``gridstat --plot``; their owner (or root) pauses, resumes, cancels them and fixes their events from it.

- **Who**: the service's identity (the trusted proxy's header, or the Unix socket's peer); anyone else reads
  and changes nothing, as with the API.
- **What it does** goes through the API's own handlers (:mod:`.app`), so that the library functions and owner
  checks are the API's and the commands'.
- **CSRF**: changes are POSTs only, each carrying a token (form field ``csrf`` or header ``X-CSRF-Token``) that
  is an HMAC, under a secret of this process, of a random session nonce and the user's name. The nonce lives
  in a ``SameSite=Strict``, ``HttpOnly`` cookie, so that a cross-site form carries neither it nor the token;
  a POST without both, with a token of another user or nonce, or that the browser marks cross-site
  (``Sec-Fetch-Site``), is a 403 and changes nothing. A restarted service has a new secret: reload the page.
- **Escaping**: pages are rendered here with :func:`html.escape` around everything a user wrote; the script
  (``static/dashboard.js``) updates them with ``textContent`` only; a Content-Security-Policy allows no inline
  script. The pages poll the dashboard's JSON (built from the API's own views) every few seconds.
- **URLs** are relative, so that the dashboard works behind a proxy that serves it under a prefix.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import campaigns as ops
from ..errors import CigriError, NotFound, PermissionDenied
from ..model import CampaignState
from ..progress import progress
from . import app as api
from .charts import svg
from .http import BadRequest, Call, Handler, one_line, status_of

STATIC = Path(__file__).with_name("static")
COOKIE = "cigri_session"
TOKEN_FIELD = "csrf"
TOKEN_HEADER = "X-CSRF-Token"
REFRESH = 5  # seconds between two updates of a page, by default (?refresh=N: 1 to 3600)
EVENTS_SHOWN = 100
MAX_FORM = 4096
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
# what the owner may do from the dashboard: the API's handler and query doing it
ACTIONS: dict[str, tuple[Handler, dict[str, str]]] = {
    "pause": (api.delete_campaign, {"hold": "1"}),
    "resume": (api.delete_campaign, {"resume": "1"}),
    "cancel": (api.delete_campaign, {}),
    "fix": (api.fix_campaign_events, {}),
}
LABELS = {"pause": "Pause", "resume": "Resume", "cancel": "Cancel", "fix": "Fix events"}


class Guard:
    """The CSRF tokens: an HMAC of the session's nonce (its cookie) and the user, under this process's secret."""

    def __init__(self, secret: bytes | None = None):
        self.secret = secret or secrets.token_bytes(32)

    def token(self, nonce: str, user: str) -> str:
        return hmac.new(self.secret, f"{nonce}\0{user}".encode(), hashlib.sha256).hexdigest()

    @staticmethod
    def nonce(request: Request) -> tuple[str, bool]:
        """The session's nonce, and whether it is new (its cookie to be set)."""
        given = request.cookies.get(COOKIE, "")
        if len(given) == 43 and given.replace("-", "").replace("_", "").isalnum():
            return given, False
        return secrets.token_urlsafe(32), True

    def check(self, request: Request, fields: Mapping[str, str], user: str) -> None:
        if request.headers.get("sec-fetch-site") == "cross-site":
            raise PermissionDenied("a cross-site request: the dashboard's actions come from its own pages")
        nonce = request.cookies.get(COOKIE)
        given = request.headers.get(TOKEN_HEADER) or fields.get(TOKEN_FIELD)
        if not nonce or not given or not hmac.compare_digest(given, self.token(nonce, user)):
            raise PermissionDenied("the request's CSRF token is missing or stale: reload the dashboard's page")


# -- the data the pages show, from the API's own views


def _may_change(user: str | None, owner: str) -> bool:
    return user is not None and user in (owner, "root")


def _actions(row: dict, user: str | None) -> list[str]:
    if not _may_change(user, row["user"]):
        return []
    state = row["state"]
    actions = {"in_treatment": ["pause", "cancel"], "paused": ["resume", "cancel"]}.get(state, [])
    return actions + (["fix"] if row["open_events"] else [])


def _with_spritz(store, row: dict, campaign) -> dict:
    """A campaign's row with Spritz's figures as the API gives them, the interval of the estimated end, and
    whether it is shown (a blocked or paused campaign has none: it ends when it is unblocked, as gridstat)."""
    stats = store.stats(campaign.id)
    blocked = ops.blocked_reason(store, campaign)
    spritz = {
        "throughput_per_hour": None if stats.get("rate") is None else stats["rate"] * 3600,
        "estimated_end": stats.get("eta"),
        "estimated_end_low": stats.get("eta_low"),
        "estimated_end_high": stats.get("eta_high"),
        "blocked": blocked,
    }
    going = campaign.state == CampaignState.IN_TREATMENT and blocked is None
    return {**spritz, **row, "eta_shown": going}  # the API's own figures where it gives them


def usage(store, service) -> list[dict]:
    """The clusters' usage as ``GET /gridusage`` gives it."""
    call = Call(store, None, {}, {}, b"")
    return api.gridusage(call, service).data["items"]


def listing(store, service, user: str | None, everything: bool) -> dict:
    """The campaigns (the running ones, or every one), as ``GET /campaigns`` lists them, with Spritz's figures."""
    states = None if everything else api.UNFINISHED
    events = store.open_event_counts()
    rows = []
    for campaign in store.campaigns(states=states):
        open_events = events.get(campaign.id, 0)
        row = _with_spritz(
            store, {**api.campaign_view(store, campaign, open_events), "open_events": open_events}, campaign
        )
        rows.append({**row, "actions": _actions(row, user)})
    return {"user": user, "campaigns": rows, "usage": usage(store, service), "now": service.clock.now()}


def details(store, service, user: str | None, cid: int) -> dict:
    """One campaign as ``GET /campaigns/<id>`` gives it, with Spritz's interval and its open events."""
    campaign = store.campaign(cid)
    total, events = store.event_page(cid, True, EVENTS_SHOWN, 0)
    row = _with_spritz(store, {**api.campaign_details(store, campaign), "open_events": total}, campaign)
    return {
        "user": user,
        "campaign": {**row, "actions": _actions(row, user)},
        "events": [api.event_view(event) for event in events],
        "events_total": total,
        "now": service.clock.now(),
    }


# -- rendering (html.escape around everything: names, params and messages are their users')


def e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def when(ts: float | None) -> str:
    """A time for a page without its script (which shows it in the browser's own zone)."""
    if ts is None:
        return "—"
    return f'<time datetime="{e(ts)}">{time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))}</time>'


def rate(per_hour: float | None) -> str:
    return "—" if per_hour is None else f"{per_hour:.1f} jobs/h"


def _field(name: str, content: str, value: Any = None, tag: str = "span") -> str:
    attribute = "" if value is None else f' data-value="{e(value)}"'
    return f'<{tag} data-field="{name}"{attribute}>{content}</{tag}>'


def _estimate(c: dict) -> tuple[str, str]:
    if not c["eta_shown"]:
        return "—", e(c["blocked"] or "")
    interval = ""
    if c["estimated_end_low"] is not None and c["estimated_end_high"] is not None:
        interval = f"{when(c['estimated_end_low'])} – {when(c['estimated_end_high'])}"
    return when(c["estimated_end"]), interval


def _percent(c: dict) -> int:
    return 100 * c["finished_jobs"] // c["total_jobs"] if c["total_jobs"] else 100


def _form(target: str, token: str, label: str, value: str, extra: str = "", confirm: str = "") -> str:
    asked = f' data-confirm="{e(confirm)}"' if confirm else ""
    return (
        f'<form class="action" method="post" action="{target}"{asked}>'
        f'<input type="hidden" name="{TOKEN_FIELD}" value="{e(token)}">{extra}'
        f'<button type="submit" value="{value}">{label}</button></form>'
    )


def _confirm(c: dict, action: str) -> str:
    return f"Cancel campaign {c['id']}?" if action == "cancel" else ""


def action_forms(root: str, c: dict, token: str, resubmit: bool = False) -> str:
    """The owner's buttons (none for anyone else); ``resubmit``: fixing events may resubmit their jobs too."""
    target = f"{root}campaigns/{c['id']}/"
    forms = [
        _form(target + action, token, LABELS[action], action, confirm=_confirm(c, action)) for action in c["actions"]
    ]
    if resubmit and "fix" in c["actions"]:
        again = '<input type="hidden" name="resubmit" value="1">'
        forms.append(_form(target + "fix", token, "Fix events and resubmit", "fix-resubmit", again))
    return "".join(forms)


def _number(item: dict, key: str) -> str:
    return _field(key, e(item[key]), item[key])


def _progress(c: dict) -> str:
    return (
        f'<progress data-field="bar" max="{c["total_jobs"]}" value="{c["finished_jobs"]}"></progress> '
        f"{_number(c, 'finished_jobs')}/{_number(c, 'total_jobs')} ({_field('percent', e(_percent(c)))}%)"
    )


def _spritz(c: dict, between: str) -> tuple[str, str]:
    """The throughput, and the estimated end and its interval (or why there is none)."""
    eta, interval = _estimate(c)
    shown = c["estimated_end"] if c["eta_shown"] else None
    return (
        _field("throughput_per_hour", rate(c["throughput_per_hour"]), c["throughput_per_hour"]),
        f"{_field('estimated_end', eta, shown)}{between}<small>{_field('interval', interval)}</small>",
    )


def campaign_row(root: str, c: dict, token: str) -> str:
    throughput, end = _spritz(c, "<br>")
    cells = [
        e(c["id"]),
        f'<a data-field="name" href="{root}campaigns/{c["id"]}">{e(c["name"])}</a>',
        _field("user", e(c["user"])),
        _field("state", e(c["state"])),
        _progress(c),
        *(_number(c, key) for key in ("running_jobs", "waiting_jobs", "failed_jobs", "open_events")),
        throughput,
        end,
    ]
    return (
        f'<tr data-id="{c["id"]}" data-actions="{" ".join(c["actions"])}">'
        + "".join(f"<td>{cell}</td>" for cell in cells)
        + f'<td class="actions">{action_forms(root, c, token)}</td></tr>'
    )


CAMPAIGN_COLUMNS = (
    "id",
    "name",
    "user",
    "state",
    "progress",
    "running",
    "waiting",
    "failed",
    "open events",
    "throughput",
    "estimated end (interval)",
    "",
)


def usage_row(u: dict) -> str:
    return (
        f'<tr data-id="{e(u["cluster"])}"><td>{_field("cluster", e(u["cluster"]))}</td>'
        f'<td><meter data-field="meter" min="0" max="{e(u["max"] or 1)}" value="{e(u["used"])}"></meter></td>'
        f"<td>{_field('used', e(u['used']), u['used'])}</td>"
        f"<td>{_field('used_by_grid', e(u['used_by_grid']), u['used_by_grid'])}</td>"
        f"<td>{_field('unavailable', e(u['unavailable']), u['unavailable'])}</td>"
        f"<td>{_field('max', e(u['max']), u['max'])}</td>"
        f"<td>{_field('date', when(u['date']))}</td></tr>"
    )


def event_row(root: str, event: dict, token: str, may_fix: bool) -> str:
    fix = _form(f"{root}events/{event['id']}/fix", token, "Fix", "fix") if may_fix else ""
    return (
        f'<tr data-id="{event["id"]}"><td>{event["id"]}</td>'
        f"<td>{_field('code', e(event['code']))}</td><td>{_field('class', e(event['class']))}</td>"
        f"<td>{_field('cluster', e(event['cluster']))}</td><td>{_field('job_id', e(event['job_id']))}</td>"
        f"<td>{_field('date_open', when(event['date_open']))}</td>"
        f"<td>{_field('message', e(event['message']))}</td>"
        f'<td class="actions">{fix}</td></tr>'
    )


def _table(table_id: str, columns: tuple[str, ...], rows: str, template: str, empty: str) -> str:
    head = "".join(f"<th>{name}</th>" for name in columns)
    return (
        f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
        f'<p class="empty" data-empty="{table_id}"{"" if not rows else " hidden"}>{empty}</p>'
        f'<template id="{table_id}-row">{template}</template>'
    )


BLANK_CAMPAIGN = {
    "id": "",
    "name": "",
    "user": "",
    "state": "",
    "total_jobs": 0,
    "finished_jobs": 0,
    "running_jobs": 0,
    "waiting_jobs": 0,
    "failed_jobs": 0,
    "open_events": 0,
    "throughput_per_hour": None,
    "estimated_end": None,
    "estimated_end_low": None,
    "estimated_end_high": None,
    "eta_shown": False,
    "blocked": None,
    "actions": [],
}
BLANK_USAGE = {"cluster": "", "max": 0, "used": 0, "used_by_grid": 0, "unavailable": 0, "date": None}
BLANK_EVENT = {"id": "", "code": "", "class": "", "cluster": "", "job_id": "", "date_open": None, "message": ""}


def page(root: str, home: str, title: str, user: str | None, token: str, live: str, refresh: int, body: str) -> str:
    who = f"signed in as {_field('user', e(user))}" if user else "anonymous: read only"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · cigri</title>"
        f'<meta name="cigri-csrf" content="{e(token)}">'
        f'<link rel="stylesheet" href="{root}static/dashboard.css">'
        f'<script src="{root}static/dashboard.js" defer></script></head>'
        f'<body data-live="{e(live)}" data-refresh="{refresh}" data-root="{root}">'
        f'<header><a class="home" href="{home}">cigri</a> <span id="who">{who}</span> '
        '<span id="updated" role="status"></span></header>'
        '<p id="said" role="status" hidden></p>'
        f"<main>{body}</main></body></html>\n"
    )


def list_page(root: str, data: dict, token: str, everything: bool, refresh: int) -> str:
    rows = "".join(campaign_row(root, c, token) for c in data["campaigns"])
    usage_rows = "".join(usage_row(u) for u in data["usage"])
    toggle = (
        f'<a href="dashboard?refresh={refresh}">running campaigns only</a>'
        if everything
        else f'<a href="dashboard?all=1&amp;refresh={refresh}">every campaign</a>'
    )
    body = (
        f"<h1>{'Every campaign' if everything else 'Running campaigns'}</h1><p>{toggle}</p>"
        + _table(
            "campaigns",
            CAMPAIGN_COLUMNS,
            rows,
            campaign_row(root, BLANK_CAMPAIGN, token),
            "no campaign",
        )
        + "<h2>Clusters' usage</h2>"
        + _table(
            "usage",
            ("cluster", "", "used", "by the grid", "unavailable", "resources", "read at"),
            usage_rows,
            usage_row(BLANK_USAGE),
            "no reading yet: the almighty records one per pass",
        )
    )
    live = f"{root}live.json" + ("?all=1" if everything else "")
    return page(root, "dashboard", "campaigns", data["user"], token, live, refresh, body)


def cluster_row(info: dict) -> str:
    cells = [
        _field("cluster_name", e(info["cluster_name"])),
        _number(info, "active_jobs"),
        _number(info, "launched_jobs"),
        _field("prologue_ok", "done" if info["prologue_ok"] else "pending"),
        _field("epilogue_ok", "done" if info["epilogue_ok"] else "pending"),
    ]
    return f'<tr data-id="{e(info["cluster_name"])}">' + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


BLANK_CLUSTER = {"cluster_name": "", "active_jobs": 0, "launched_jobs": 0, "prologue_ok": False, "epilogue_ok": False}


def campaign_page(root: str, data: dict, token: str, refresh: int) -> str:
    c = data["campaign"]
    cid = c["id"]
    throughput, end = _spritz(c, " ")
    facts = [
        ("User", _field("user", e(c["user"]))),
        ("Type", e(c["type"])),
        ("State", f"{_field('state', e(c['state']))} <small>{_field('blocked', e(c['blocked'] or ''))}</small>"),
        ("Submitted", when(c["submission_time"])),
        ("Ended", _field("ended_at", when(c["ended_at"]))),
        ("Progress", _progress(c)),
        (
            "Running / waiting / failed",
            " / ".join(_number(c, k) for k in ("running_jobs", "waiting_jobs", "failed_jobs")),
        ),
        ("Open events", _number(c, "open_events")),
        ("Throughput", throughput),
        ("Estimated end", end),
    ]
    summary = (
        f'<section id="campaign" data-id="{cid}" data-actions="{" ".join(c["actions"])}">'
        f'<h1>Campaign {cid}: <span data-field="name">{e(c["name"])}</span></h1><dl>'
        + "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
        + f'</dl><div class="actions">{action_forms(root, c, token, resubmit=True)}</div></section>'
    )
    clusters = "".join(cluster_row(info) for info in c["clusters"].values())
    events = "".join(event_row(root, event, token, "fix" in c["actions"]) for event in data["events"])
    plot = f"{root}campaigns/{cid}/plot.svg"
    body = (
        summary
        + "<h2>On its clusters</h2>"
        + _table(
            "clusters",
            ("cluster", "active jobs", "launched", "prologue", "epilogue"),
            clusters,
            cluster_row(BLANK_CLUSTER),
            "on no cluster",
        )
        + "<h2>Open events</h2>"
        + _table(
            "events",
            ("id", "code", "class", "cluster", "job", "opened", "message", ""),
            events,
            event_row(root, BLANK_EVENT, token, True),
            "no open event",
        )
        + "<h2>Progress</h2>"
        + f'<img id="plot" src="{plot}" alt="jobs done, throughput per cluster and predicted end over time">'
        + f'<p><a href="../../campaigns/{cid}?pretty">this campaign in the API</a></p>'
    )
    live = f"{root}campaigns/{cid}/live.json"
    return page(root, "../../dashboard", f"campaign {cid}", data["user"], token, live, refresh, body)


# -- the routes


def _refresh(request: Request) -> int:
    text = request.query_params.get("refresh", "")
    return min(3600, max(1, int(text))) if text.isdigit() else REFRESH


def _html(text: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type="text/html; charset=utf-8", headers=HEADERS)


def _error_page(status: int, message: str) -> Response:
    return _html(f"<!doctype html>\n<title>{status}</title><h1>{status}</h1><p>{e(one_line(message))}</p>\n", status)


def _json(data: Any, status: int = 200) -> Response:
    text = json.dumps(data, ensure_ascii=False).translate(
        str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})
    )
    return Response(text, status_code=status, media_type="application/json", headers=HEADERS)


def routes(service) -> list:
    """The dashboard's routes, mounted beside the API's by :func:`cigri.service.app.create_app`."""
    guard = Guard()

    def user_of(request: Request) -> str | None:
        return service.identity.user(request.scope, request.headers)

    async def in_pool(fn: Callable, *args):
        return await run_in_threadpool(lambda: fn(service.store(), service, *args))

    def session(request: Request, user: str | None) -> tuple[str, str | None]:
        """The page's token, and the nonce to set in a cookie when the session is new."""
        nonce, new = guard.nonce(request)
        return (guard.token(nonce, user) if user else ""), (nonce if new else None)

    def with_cookie(response: Response, request: Request, nonce: str | None) -> Response:
        if nonce is not None:
            secure = request.headers.get("x-forwarded-proto", request.url.scheme) == "https"
            response.set_cookie(COOKIE, nonce, path="/", httponly=True, samesite="strict", secure=secure)
        return response

    def slash(request: Request, to: str) -> Response | None:
        """A page asked with a trailing slash is sent to its name without (its relative links need it)."""
        if request.scope.get("raw_path", b"").endswith(b"/"):
            return RedirectResponse(to, status_code=308)
        return None

    async def campaigns(request: Request) -> Response:
        if (moved := slash(request, "../dashboard")) is not None:
            return moved
        user = user_of(request)
        everything = "all" in request.query_params
        data = await in_pool(listing, user, everything)
        token, nonce = session(request, user)
        text = list_page("dashboard/", data, token, everything, _refresh(request))
        return with_cookie(_html(text), request, nonce)

    async def live(request: Request) -> Response:
        return _json(await in_pool(listing, user_of(request), "all" in request.query_params))

    async def campaign(request: Request) -> Response:
        cid = request.path_params["id"]
        if (moved := slash(request, f"../{cid}")) is not None:
            return moved
        user = user_of(request)
        try:
            data = await in_pool(details, user, _campaign_id(cid))
        except CigriError as exc:
            return _error_page(status_of(exc), str(exc))
        token, nonce = session(request, user)
        return with_cookie(_html(campaign_page("../", data, token, _refresh(request))), request, nonce)

    async def campaign_live(request: Request) -> Response:
        try:
            return _json(await in_pool(details, user_of(request), _campaign_id(request.path_params["id"])))
        except CigriError as exc:
            return _json({"message": one_line(str(exc))}, status_of(exc))

    async def plot(request: Request) -> Response:
        try:
            drawn = await in_pool(
                lambda store, _, cid: svg(progress(store, cid, service.clock.now())),
                _campaign_id(request.path_params["id"]),
            )
        except CigriError as exc:
            return _json({"message": one_line(str(exc))}, status_of(exc))
        headers = {**HEADERS, "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"}
        return Response(drawn, media_type="image/svg+xml", headers=headers)

    async def act(request: Request, handler: Handler, path: dict, query: dict, back: str) -> Response:
        """Run one of the API's handlers for the request's user, once its CSRF token is checked."""
        wants_json = "application/json" in request.headers.get("accept", "")
        try:
            fields = await _fields(request)
            user = user_of(request)
            if user is None:
                raise PermissionDenied(
                    "not authenticated: changes come through the front proxy (its user header) or the service's "
                    "Unix socket"
                )
            guard.check(request, fields, user)
            if fields.get("resubmit") == "1":
                query = {**query, "resubmit": "1"}
            answer = await run_in_threadpool(service.run, handler, user, path, query, b"")
        except Exception as exc:
            status = status_of(exc)
            message = str(exc) if status != 500 else "internal error (see the log)"
            if status == 500:
                api.log.error("POST %s failed", request.url.path, exc_info=exc)
            if wants_json:
                return _json({"message": one_line(message)}, status)
            return _error_page(status, message)
        if wants_json:
            return _json({"message": one_line(answer.data["message"])}, 200)
        return RedirectResponse(back, status_code=303)

    async def campaign_action(request: Request) -> Response:
        cid, action = request.path_params["id"], request.path_params["action"]
        if action not in ACTIONS:
            return _json({"message": f"no action {action!r}: {', '.join(ACTIONS)}"}, 404)
        handler, query = ACTIONS[action]
        return await act(request, handler, {"id": cid}, query, f"../{cid}")

    async def event_action(request: Request) -> Response:
        eid = request.path_params["id"]
        return await act(request, api.fix_event, {"id": eid}, {}, f"../../events/{eid}/back")

    async def event_back(request: Request) -> Response:
        """Where a fixed event's page leads without the script: its campaign's page."""
        found = await in_pool(
            lambda store, _, eid: store.events(event_id=eid, open_only=False), request.path_params["id"]
        )
        if not found or found[0].campaign_id is None:
            return RedirectResponse("../../", status_code=303)
        return RedirectResponse(f"../../campaigns/{found[0].campaign_id}", status_code=303)

    return [
        Route("/dashboard", campaigns, methods=["GET", "HEAD"]),
        Route("/dashboard/live.json", live, methods=["GET"]),
        Route("/dashboard/campaigns/{id:int}", campaign, methods=["GET", "HEAD"]),
        Route("/dashboard/campaigns/{id:int}/live.json", campaign_live, methods=["GET"]),
        Route("/dashboard/campaigns/{id:int}/plot.svg", plot, methods=["GET"]),
        Route("/dashboard/campaigns/{id:int}/{action}", campaign_action, methods=["POST"]),
        Route("/dashboard/events/{id:int}/fix", event_action, methods=["POST"]),
        Route("/dashboard/events/{id:int}/back", event_back, methods=["GET"]),
        Mount("/dashboard/static", StaticFiles(directory=STATIC), name="dashboard-static"),
    ]


def _campaign_id(number: int) -> int:
    if not 1 <= number <= api.SQLITE_MAX_INT:
        raise NotFound(f"no campaign {number}")
    return number


async def _fields(request: Request) -> dict[str, str]:
    """The POST's urlencoded fields (the dashboard's forms and script send nothing else)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise BadRequest(f"a dashboard form is under {MAX_FORM} bytes")
    return dict(parse_qsl(body.decode("utf-8", errors="replace")))
