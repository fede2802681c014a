"""CiGri's REST API, route for route (CiGri's ``doc_api.rst`` and ``api/cigri-api.rb``), over the library the
commands use: the same functions, with the request's user in place of the running one, so that owner checks
are the commands' own (a campaign's owner or root changes it; gridstat's lists and gridevents' listings are
anyone's; a job's details and outputs and a campaign's JDL are its owner's).

What a JDL makes the service's own host read, create or run is refused through the API: ``param_file``
(gridsub reads it on the user's machine and sends ``params``), ``data_source``/``input_files``,
``output_file``/``output_destination`` and ``work_generator``; and a cluster whose jobs run on this host
as the service's user (the ``local`` adapter) takes campaigns from that user and root only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.routing import Route, Router

from .. import campaigns as ops
from .. import jdl as jdl_mod
from .. import notify, views
from ..adapters import AdapterContext, adapter_for
from ..clock import Clock, RealClock
from ..errors import CigriError, JdlError, NotFound, PermissionDenied
from ..model import Campaign, CampaignState, Event, EventCode, Job, JobState
from ..secrets import mask
from ..store import Store
from .http import Answer, BadRequest, Call, Handler, Resource, encode, error, flag, is_pretty, json_body, link, whole
from .identity import Identity

SQLITE_MAX_INT = 2**63 - 1
MAX_LIMIT = 100_000
# JDL keys that make the service's host read a path, create a folder or run a command for the user
HOST_KEYS = ("param_file", "data_source", "input_files", "output_file", "output_destination", "work_generator")
RUNS_HERE = ("local",)  # adapters whose jobs run on the service's host, as its user
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]  # the others are a 405 saying which
UNFINISHED = (CampaignState.IN_TREATMENT, CampaignState.PAUSED)


class Service:
    """The state the routes share: how to open a store (one per worker thread), who is who, the clock."""

    def __init__(self, open_store: Callable[[], Store], identity: Identity, clock: Clock | None = None):
        self.open_store = open_store
        self.identity = identity
        self.clock = clock or RealClock()
        self._local = threading.local()
        # each listed campaign's JSON, kept with what it was made of: a list read again after one campaign
        # changed encodes that one only (entries are replaced whole: safe to share between worker threads)
        self.listed: dict[int, tuple[tuple, str]] = {}

    def store(self) -> Store:
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = self.open_store()
        return store

    def remembered(self, key: tuple, build: Callable[[], Answer]) -> Answer:
        """``build()``, or what it gave this thread for the same ``key`` the last time (one kept per thread,
        with its JSON once encoded): a portal polling a list the state has not changed since is not read and
        encoded the same thousand rows again."""
        kept = getattr(self._local, "kept", None)
        if kept is None or kept[0] != key:
            kept = self._local.kept = (key, build())
        return kept[1]

    def run(self, handler: Handler, user: str | None, path: Mapping, query: Mapping, body: bytes) -> Answer:
        return handler(Call(self.store(), user, dict(path), query, body), self)


# -- what the answers hold


def _campaign_links(cid: int) -> list[dict]:
    return [
        link("self", f"/campaigns/{cid}"),
        link("parent", "/campaigns"),
        link("collection", f"/campaigns/{cid}/jobs", "jobs"),
        link("collection", f"/campaigns/{cid}/events", "events"),
        link("item", f"/campaigns/{cid}/jdl", "jdl"),
    ]


def campaign_view(
    store: Store, campaign: Campaign, open_events: int | None = None, counts: Mapping[JobState, int] | None = None
) -> dict:
    """A campaign as gridstat lists it (:func:`cigri.views.campaign_row`) with CiGri's API's names."""
    if open_events is None:
        open_events = store.event_page(campaign.id, True, 0, 0)[0]
    row = views.campaign_row(store, campaign, open_events, counts)
    return {
        **row,
        "has_events": open_events > 0,
        "submission_time": campaign.submitted_at,
        "ended_at": campaign.ended_at,
        "total_jobs": campaign.nb_jobs,
        "finished_jobs": row["done"],
        "failed_jobs": row["failed"],
        "running_jobs": row["running"],
        "waiting_jobs": row["waiting"],
        "links": _campaign_links(campaign.id),
    }


def campaign_details(store: Store, campaign: Campaign) -> dict:
    """A campaign with its clusters (CiGri's active and queued jobs, prologue and epilogue done), why it is
    blocked, and Spritz's figures."""
    clusters = {}
    for name, info in store.campaign_clusters(campaign.id, settings=False).items():
        clusters[name] = {
            "cluster_name": name,
            "active_jobs": store.active_by_campaign(name).get(campaign.id, 0),
            "launched_jobs": info["launched"],
            "prologue_ok": info["prologue_state"] in ("done", "none"),
            "epilogue_ok": info["epilogue_state"] in ("done", "none"),
        }
    stats = store.stats(campaign.id)
    return {
        **campaign_view(store, campaign),
        "clusters": clusters,
        "blocked": ops.blocked_reason(store, campaign),
        "throughput_per_hour": None if stats.get("rate") is None else stats["rate"] * 3600,
        "estimated_end": stats.get("eta"),
    }


def job_view(job: Job) -> dict:
    """A job as gridstat -f lists it (:func:`cigri.views.job_row`), its params also by CiGri's name."""
    return {**views.job_row(job), "parameters": job.params, "href": f"/campaigns/{job.campaign_id}/jobs/{job.id}"}


def job_details(store: Store, job: Job) -> dict:
    """A job as gridstat -j shows it (:func:`cigri.views.job_record`)."""
    return {
        **views.job_record(store, job),
        "parameters": job.params,
        "href": f"/campaigns/{job.campaign_id}/jobs/{job.id}",
        "links": [
            link("self", f"/jobs/{job.id}"),
            link("parent", f"/campaigns/{job.campaign_id}/jobs"),
            link("item", f"/jobs/{job.id}/stdout", "stdout"),
            link("item", f"/jobs/{job.id}/stderr", "stderr"),
        ],
    }


def event_view(event: Event) -> dict:
    """An event as gridevents lists it (:func:`cigri.views.event_record`), with CiGri's API's names."""
    return {
        **views.event_record(event),
        "parent": event.parent_id,
        "date_open": event.created_at,
        "date_closed": event.closed_at,
        "links": [link("self", f"/events/{event.id}")]
        + ([link("parent", f"/campaigns/{event.campaign_id}/events")] if event.campaign_id is not None else []),
    }


def accepted(message: str, *links: dict, **figures: Any) -> Answer:
    """202, and what was done in ``figures`` (the commands print them)."""
    return Answer({"status": 202, "title": "Accepted", "message": message, **figures, "links": list(links)}, 202)


# -- who may


def signed_in(call: Call) -> str:
    if call.user is None:
        raise PermissionDenied(
            "not authenticated: changes come through the front proxy (its user header) or the service's Unix socket"
        )
    return call.user


def _id(call: Call, key: str, what: str) -> int:
    number = call.path[key]
    if not 1 <= number <= SQLITE_MAX_INT:
        raise NotFound(f"no {what} {number}")
    return number


def owned_campaign(call: Call, key: str = "id") -> Campaign:
    campaign = call.store.campaign(_id(call, key, "campaign"))
    ops.check_owner(campaign, signed_in(call))
    return campaign


def owned_job(call: Call) -> Job:
    job = call.store.job(_id(call, "id", "job"))
    ops.check_owner(call.store.campaign(job.campaign_id), signed_in(call))
    return job


# -- the routes


def root(call: Call, service: Service) -> Answer:
    return Answer(
        {
            "links": [
                link("self", "/"),
                link("collection", "/campaigns", "campaigns"),
                link("collection", "/clusters", "clusters"),
                link("collection", "/gridusage", "gridusage"),
                link("collection", "/notifications", "notifications"),
            ]
        }
    )


def _cluster_state(store: Store, name: str) -> str:
    if store.blacklist(None, name) is not None:
        return "BLACKLISTED"
    return "PROBLEM" if store.open_cluster_event(name) else "ok"


def clusters(call: Call, service: Service) -> Answer:
    """The clusters, each with its last recorded ``usage`` (gridclusters -u); ``ask``: each asked now, as
    gridclusters lists them (:func:`cigri.views.cluster_rows`)."""
    usage = {row["cluster"]: row for row in views.usage_rows(call.store)}
    asked = (
        {row["name"]: row for row in views.cluster_rows(call.store, service.clock)} if flag(call.query, "ask") else {}
    )
    items = [
        {
            **asked.get(cluster.name, {}),
            "id": cluster.name,
            "name": cluster.name,
            "adapter": cluster.adapter,
            "usage": usage[cluster.name],
            "links": [link("self", f"/clusters/{cluster.name}"), link("parent", "/clusters")],
        }
        for cluster in call.store.clusters()
    ]
    return Answer({"items": items, "total": len(items), "links": [link("self", "/clusters"), link("parent", "/")]})


def cluster(call: Call, service: Service) -> Answer:
    """A cluster as gridclusters -i shows it (its settings' secrets masked), from what the last pass recorded:
    the API does not ask the cluster, but with ``ask`` (then its state and problem are the cluster's answer,
    and its open events are listed, :func:`cigri.views.cluster_info`)."""
    store = call.store
    found = store.cluster(call.path["name"])
    if flag(call.query, "ask"):
        info = views.cluster_info(store, service.clock, found.name)
        return Answer({**info, "id": found.name, "links": [link("self", f"/clusters/{found.name}")]})
    reading = store.recorded_usage().get(found.name)
    return Answer(
        {
            "id": found.name,
            "name": found.name,
            "adapter": found.adapter,
            "settings": mask(found.config),
            "state": _cluster_state(store, found.name),
            "blacklisted": store.blacklist(None, found.name) is not None,
            "usage": None if reading is None else _usage_row(found.name, *reading),
            "links": [link("self", f"/clusters/{found.name}"), link("parent", "/clusters")],
        }
    )


def campaigns(call: Call, service: Service) -> Answer:
    """The running campaigns (in treatment or paused), as CiGri's API lists them; ``all``: every one;
    ``user``: one user's. Read again only once the state changed (:meth:`Service.remembered`)."""
    store = call.store
    states = None if flag(call.query, "all") else UNFINISHED
    user = call.query.get("user")

    pretty = is_pretty(call.query)
    links = [link("self", "/campaigns"), link("parent", "/")]

    def build() -> Answer:
        events = store.open_event_counts()
        if pretty:
            listed = store.campaigns(user=user, states=states)
            counts = store.counts_of([c.id for c in listed])
            items = [campaign_view(store, c, events.get(c.id, 0), counts[c.id]) for c in listed]
            return Answer({"items": items, "total": len(items), "links": links})
        rows = store.campaign_list(user=user, states=states)
        counts = store.counts_of([row[0] for row in rows])
        texts = []
        for row in rows:
            cid = row[0]
            made_of = (*row, events.get(cid, 0), *counts[cid].values())
            kept = service.listed.get(cid)
            if kept is None or kept[0] != made_of:
                view = campaign_view(store, store.campaign(cid), events.get(cid, 0), counts[cid])
                kept = service.listed[cid] = (made_of, encode(view))
            texts.append(kept[1])
        if len(service.listed) > 2 * len(rows) + 1000:  # forget the campaigns no list shows any more
            shown = {row[0] for row in rows}
            for cid in [cid for cid in service.listed if cid not in shown]:
                service.listed.pop(cid, None)
        text = '{"items": [' + ", ".join(texts) + f'], "total": {len(texts)}, "links": ' + encode(links) + "}\n"
        return Answer({}, encoded={False: text.encode()})

    return service.remembered(("campaigns", states, user, pretty, *store.version()), build)


def submit(call: Call, service: Service) -> Answer:
    """POST /campaigns: a JDL (a JSON object) submitted as gridsub does, by the request's user."""
    user = signed_in(call)
    store = call.store
    text = call.body.decode("utf-8", errors="replace")
    if not text.lstrip().startswith("{"):
        raise BadRequest("the body must be a JSON object: the campaign's JDL")
    data = jdl_mod.load_text(text, "the JDL")
    for key in data:
        if isinstance(key, str) and key.lower() in HOST_KEYS:
            raise JdlError(
                key,
                "not taken by the service: it would be read, made or run on the service's host; give the jobs "
                "as params (gridsub reads a param_file on your machine)",
            )
    jdl = jdl_mod.parse(data)
    jdl, warnings = ops.known_clusters(store, jdl)
    _may_run_here(store, jdl, user)
    cid, _ = ops.submit(store, jdl, service.clock, user=user)
    view = campaign_view(store, store.campaign(cid), 0)
    return Answer({**view, "warnings": warnings}, 201, f"/campaigns/{cid}")


def _may_run_here(store: Store, jdl: jdl_mod.Jdl, user: str) -> None:
    owner = ops.state_owner(store)
    if user in ("root", owner):
        return
    for name in jdl.clusters:
        adapter = store.cluster(name).adapter
        if adapter in RUNS_HERE:
            raise PermissionDenied(
                f"cluster {name} ({adapter}) runs its jobs on the service's host as {owner}: only {owner} and root "
                f"submit to it through the service, not {user}"
            )


def campaign(call: Call, service: Service) -> Answer:
    return Answer(campaign_details(call.store, call.store.campaign(_id(call, "id", "campaign"))))


def update(call: Call, service: Service) -> Answer:
    """PUT /campaigns/<id>: a new ``name``, or ``state`` paused or in_treatment (pause, resume), from a JSON
    object body or the query, as CiGri takes them."""
    store = call.store
    found = owned_campaign(call)
    fields = dict(call.query)
    fields.pop("pretty", None)
    if call.body.strip():
        given = json_body(call, f"PUT /campaigns/{found.id}")
        if not isinstance(given, dict):
            raise BadRequest("the body must be a JSON object: name and/or state")
        fields.update(given)
    unknown = sorted(set(fields) - {"name", "state"})
    if unknown or not fields:
        raise BadRequest(
            f"a campaign's name and state change ({'not ' + ', '.join(unknown) if unknown else 'none given'})"
        )
    name = fields.get("name")
    if "name" in fields and (not isinstance(name, str) or not name.strip() or "\x00" in name):
        raise BadRequest("name: expected a non-empty text")
    state = fields.get("state")
    if "state" in fields and state not in ("paused", "in_treatment"):
        raise BadRequest(f"state: expected paused or in_treatment, got {state!r}")
    with store.transaction():
        if name is not None:
            store.rename_campaign(found.id, name.strip())
        if state == "paused" and found.state != CampaignState.PAUSED:
            ops.pause(store, found.id, user=call.user)
        elif state == "in_treatment" and found.state != CampaignState.IN_TREATMENT:
            ops.resume(store, found.id, user=call.user, clock=service.clock)
    return Answer(campaign_details(store, store.campaign(found.id)), 202)


def delete_campaign(call: Call, service: Service) -> Answer:
    """DELETE /campaigns/<id>: cancel it (griddel); ``?hold`` pauses, ``?resume`` resumes, ``?purge`` forgets
    an ended one (griddel -p, -r, --purge)."""
    store = call.store
    found = owned_campaign(call)
    chosen = [name for name in ("hold", "resume", "purge") if flag(call.query, name)]
    if len(chosen) > 1:
        raise BadRequest(f"{' and '.join(chosen)} exclude each other")
    if chosen == ["hold"]:
        ops.pause(store, found.id, user=call.user)
        done = "paused"
    elif chosen == ["resume"]:
        ops.resume(store, found.id, user=call.user, clock=service.clock)
        done = "resumed"
    elif chosen == ["purge"]:
        ops.purge(store, [found.id], user=call.user).remove()
        return accepted(f"Campaign {found.id} purged", link("parent", "/campaigns"))
    else:
        killed = ops.cancel(store, found.id, service.clock, user=call.user)
        done = "cancelled" + (f"; {killed} job(s) will be killed" if killed else "")
        return accepted(f"Campaign {found.id} {done}", link("self", f"/campaigns/{found.id}"), killed=killed)
    return accepted(f"Campaign {found.id} {done}", link("self", f"/campaigns/{found.id}"))


def campaign_stats(call: Call, service: Service) -> Answer:
    """GET /campaigns/<id>/stats: Spritz's figures, for the campaign and each of its clusters, its held jobs,
    why it is blocked and its forecast history, as gridstat -c shows them (:func:`cigri.views.campaign_summary`;
    anyone's, as gridstat -c)."""
    found = call.store.campaign(_id(call, "id", "campaign"))
    summary = views.campaign_summary(call.store, found)
    return Answer(
        {**summary, "links": [link("self", f"/campaigns/{found.id}/stats"), link("parent", f"/campaigns/{found.id}")]}
    )


def campaign_jdl(call: Call, service: Service) -> Answer:
    """The JDL as saved (its secrets masked), the owner's only, as gridstat -J."""
    found = owned_campaign(call)
    return Answer(
        {
            "jdl": found.jdl,
            "links": [link("self", f"/campaigns/{found.id}/jdl"), link("parent", f"/campaigns/{found.id}")],
        }
    )


def jobs(call: Call, service: Service) -> Answer:
    """A page of a campaign's jobs (``limit`` 100, ``offset`` 0), read in SQL (gridstat -f shows them to
    anyone). ``after=JOB_ID`` pages by key instead: the jobs whose id is above it, as cheap at the end of a
    campaign of millions as at its start (its ``offset`` is then null). The ``next`` link of a page asked by
    ``offset`` goes on by offset, as CiGri's; that of any other page by ``after``."""
    store = call.store
    found = store.campaign(_id(call, "id", "campaign"))
    limit = whole(call.query, "limit", 100, 1, MAX_LIMIT)
    if "after" in call.query and "offset" in call.query:
        raise BadRequest("after and offset exclude each other: page by one of them")
    after = whole(call.query, "after", 0, 0, SQLITE_MAX_INT) if "after" in call.query else None
    offset = whole(call.query, "offset", 0, 0, SQLITE_MAX_INT)
    page = store.job_page(found.id, limit + 1, offset, after)  # one more: is there a next page?
    items = [job_view(job) for job in page[:limit]]
    base = f"/campaigns/{found.id}/jobs"
    links = [link("self", base), link("parent", f"/campaigns/{found.id}")]
    if "offset" in call.query:
        if offset + limit < found.nb_jobs:
            links.append(link("next", f"{base}?limit={limit}&offset={offset + limit}"))
        if offset:
            links.append(link("prev", f"{base}?limit={limit}&offset={max(0, offset - limit)}"))
    elif len(page) > limit:
        links.append(link("next", f"{base}?limit={limit}&after={page[limit - 1].id}"))
    return Answer(
        {
            "items": items,
            "total": found.nb_jobs,
            "offset": None if after is not None else offset,
            "after": after,
            "limit": limit,
            "links": links,
        }
    )


def add_jobs(call: Call, service: Service) -> Answer:
    """POST /campaigns/<id>/jobs: a JSON array of param lines, added as gridsub -c does."""
    cid = _id(call, "id", "campaign")
    lines = json_body(call, f"POST /campaigns/{cid}/jobs")
    if not isinstance(lines, list) or not lines or not all(isinstance(line, str) for line in lines):
        raise BadRequest("the body must be a non-empty JSON array of param lines")
    extra = jdl_mod.Jdl(name="", clusters={}, params=tuple(lines))
    added = ops.add_jobs(call.store, cid, extra, user=signed_in(call))
    return Answer({**campaign_view(call.store, call.store.campaign(cid)), "added": added}, 201, f"/campaigns/{cid}")


def campaign_job(call: Call, service: Service) -> Answer:
    job = owned_job(replace(call, path={**call.path, "id": call.path["job_id"]}))
    if job.campaign_id != call.path["id"]:
        raise NotFound(f"no job {job.id} in campaign {call.path['id']}")
    return Answer(job_details(call.store, job))


def campaign_events(call: Call, service: Service) -> Answer:
    """A campaign's open events (``all``: closed ones too), ``limit`` 100 and ``offset`` 0, as gridevents -c."""
    found = call.store.campaign(_id(call, "id", "campaign"))
    limit = whole(call.query, "limit", 100, 1, MAX_LIMIT)
    offset = whole(call.query, "offset", 0, 0, SQLITE_MAX_INT)
    total, events = call.store.event_page(found.id, not flag(call.query, "all"), limit, offset)
    return Answer(
        {
            "items": [event_view(event) for event in events],
            "total": total,
            "offset": offset,
            "limit": limit,
            "links": [link("self", f"/campaigns/{found.id}/events"), link("parent", f"/campaigns/{found.id}")],
        }
    )


def fix_campaign_events(call: Call, service: Service) -> Answer:
    """DELETE /campaigns/<id>/events: fix them (``?resubmit``: their failed jobs run again; ``code``: those of
    one code), gridevents -c -f."""
    cid = _id(call, "id", "campaign")
    result = ops.fix_events(
        call.store,
        service.clock,
        campaign_id=cid,
        code=_event_code(call.query),
        resubmit=flag(call.query, "resubmit"),
        user=signed_in(call),
    )
    return accepted(
        f"Campaign {cid}: {result.closed} event(s) closed, {result.resubmitted} job(s) resubmitted",
        link("self", f"/campaigns/{cid}/events"),
        closed=result.closed,
        resubmitted=result.resubmitted,
    )


def _event_code(query: Mapping[str, str]) -> EventCode | None:
    text = query.get("code")
    if text is None:
        return None
    try:
        return EventCode(text.upper())
    except ValueError:
        raise BadRequest(f"code: no event code {text!r} (valid: {', '.join(c.value for c in EventCode)})") from None


def events(call: Call, service: Service) -> Answer:
    """GET /events: events as gridevents lists them, oldest first: the open ones (``all``: closed ones too), of
    one campaign (``campaign``), of one code (``code``), or the global ones (``global``: the clusters' and the
    admin's blacklists)."""
    query = call.query
    campaign_id = whole(query, "campaign", 0, 1, SQLITE_MAX_INT) if "campaign" in query else None
    if campaign_id is not None:
        call.store.campaign(campaign_id)
    found = call.store.events(
        campaign_id=campaign_id,
        open_only=not flag(query, "all"),
        code=_event_code(query),
        global_only=flag(query, "global"),
    )
    items = [event_view(event) for event in found]
    return Answer({"items": items, "total": len(items), "links": [link("self", "/events"), link("parent", "/")]})


def event(call: Call, service: Service) -> Answer:
    eid = _id(call, "id", "event")
    found = call.store.events(event_id=eid, open_only=False)
    if not found:
        raise NotFound(f"no event {eid}")
    return Answer(event_view(found[0]))


def fix_event(call: Call, service: Service) -> Answer:
    eid = _id(call, "id", "event")
    result = ops.fix_events(
        call.store, service.clock, event_id=eid, resubmit=flag(call.query, "resubmit"), user=signed_in(call)
    )
    return accepted(
        f"Event {eid} closed ({result.closed} in all, {result.resubmitted} job(s) resubmitted)",
        link("self", f"/events/{eid}"),
        closed=result.closed,
        resubmitted=result.resubmitted,
    )


def job(call: Call, service: Service) -> Answer:
    return Answer(job_details(call.store, owned_job(call)))


def _output(stream: str) -> Handler:
    def handler(call: Call, service: Service) -> Answer:
        """A job's stdout or stderr, read from its cluster (its owner's, as gridstat -O and -E)."""
        found = owned_job(call)
        if not found.cluster or not found.remote_id:
            raise CigriError(f"job {found.id} has not run yet: no {stream}")
        where = call.store.cluster_of_outputs(found.cluster)
        adapter = adapter_for(where, AdapterContext(call.store.directory, service.clock))
        try:
            text = adapter.tail(found.remote_id, stream, 0)
        finally:
            adapter.close()
        return Answer(
            {"output": text, "links": [link("self", f"/jobs/{found.id}/{stream}"), link("parent", f"/jobs/{found.id}")]}
        )

    return handler


def cancel_job(call: Call, service: Service) -> Answer:
    found = owned_job(call)
    what = ops.cancel_job(call.store, found.id, user=call.user)
    return accepted(f"Job {found.id} {what}", link("self", f"/jobs/{found.id}"), result=what)


def rm_details(call: Call, service: Service) -> Answer:
    """GET /jobs/<id>/rm: the job as its resource manager says it, read now (gridstat -j -C; its owner's)."""
    found = owned_job(call)
    record = ops.rm_details(call.store, found.id, service.clock, user=call.user)
    return Answer(
        {"record": record, "links": [link("self", f"/jobs/{found.id}/rm"), link("parent", f"/jobs/{found.id}")]}
    )


NOTIFY_KINDS = {"mail": notify.MAIL, "webhook": notify.WEBHOOK}


def _kind(call: Call) -> str:
    name = call.path["kind"]
    if name not in NOTIFY_KINDS:
        raise NotFound(f"no notification type {name!r}: cigri notifies by {' or '.join(NOTIFY_KINDS)}")
    return NOTIFY_KINDS[name]


def notifications(call: Call, service: Service) -> Answer:
    items = call.store.subscriptions(signed_in(call))
    return Answer({"items": items, "total": len(items), "links": [link("self", "/notifications"), link("parent", "/")]})


def subscribe(call: Call, service: Service) -> Answer:
    """POST /notifications/mail (or webhook): ``{"identity": address, "severity": low|medium|high}``."""
    user = signed_in(call)
    kind = _kind(call)
    given = json_body(call, f"POST /notifications/{call.path['kind']}")
    if not isinstance(given, dict) or not isinstance(given.get("identity"), str):
        raise BadRequest('the body must be a JSON object: {"identity": ADDRESS, "severity": low|medium|high}')
    severity = given.get("severity", "medium")
    if not isinstance(severity, str):
        raise BadRequest("severity: expected low, medium or high")
    new = notify.subscribe(call.store, user, kind, given["identity"], severity, service.clock)
    return Answer(
        {
            "status": 201,
            "title": "Created",
            "message": "New subscription created" if new else "Subscription changed",
            "new": new,
            "links": [link("parent", "/notifications")],
        },
        201,
        "/notifications",
    )


def unsubscribe(call: Call, service: Service) -> Answer:
    """DELETE /notifications/mail (or webhook): ``?identity=ADDRESS``, or every one of that type."""
    user = signed_in(call)
    kind = _kind(call)
    target = call.query.get("identity")
    with call.store.transaction():
        removed = call.store.unsubscribe(user, kind, target)
    if not removed:
        raise NotFound(f"no {call.path['kind']} subscription of {user}" + (f" for {target}" if target else ""))
    return accepted(f"{removed} subscription(s) removed", link("parent", "/notifications"), removed=removed)


def _usage_row(name: str, capacity, at: float) -> dict:
    return {
        "cluster": name,
        "max": capacity.total + capacity.down,
        "used": capacity.used,
        "used_by_grid": capacity.grid_used,
        "unavailable": capacity.down,
        "date": at,
    }


def _time(query: Mapping[str, str], name: str) -> float | None:
    text = query.get(name)
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise BadRequest(f"{name}: expected a time in seconds since the epoch, got {text!r}") from None


def gridusage(call: Call, service: Service) -> Answer:
    """Each cluster's capacity as the last pass recorded it (gridclusters -u), those taken between ``from`` and
    ``to`` (seconds since the epoch). cigri keeps each cluster's latest reading, not CiGri's history."""
    low, high = _time(call.query, "from"), _time(call.query, "to")
    items = [
        _usage_row(name, capacity, at)
        for name, (capacity, at) in sorted(call.store.recorded_usage().items())
        if (low is None or at >= low) and (high is None or at <= high)
    ]
    return Answer(
        {
            "items": items,
            "from": low,
            "to": high,
            "total": len(items),
            "links": [link("self", "/gridusage"), link("parent", "/")],
        }
    )


def routes(service: Service) -> list[tuple[str, dict[str, Handler]]]:
    return [
        ("/", {"GET": root}),
        ("/clusters", {"GET": clusters}),
        ("/clusters/{name}", {"GET": cluster}),
        ("/campaigns", {"GET": campaigns, "POST": submit}),
        ("/campaigns/{id:int}", {"GET": campaign, "PUT": update, "DELETE": delete_campaign}),
        ("/campaigns/{id:int}/jdl", {"GET": campaign_jdl}),
        ("/campaigns/{id:int}/stats", {"GET": campaign_stats}),
        ("/campaigns/{id:int}/jobs", {"GET": jobs, "POST": add_jobs}),
        ("/campaigns/{id:int}/jobs/{job_id:int}", {"GET": campaign_job}),
        ("/campaigns/{id:int}/events", {"GET": campaign_events, "DELETE": fix_campaign_events}),
        ("/events", {"GET": events}),
        ("/events/{id:int}", {"GET": event, "DELETE": fix_event}),
        ("/notifications", {"GET": notifications}),
        ("/notifications/{kind}", {"POST": subscribe, "DELETE": unsubscribe}),
        ("/gridusage", {"GET": gridusage}),
        ("/jobs/{id:int}", {"GET": job, "DELETE": cancel_job}),
        ("/jobs/{id:int}/stdout", {"GET": _output("stdout")}),
        ("/jobs/{id:int}/stderr", {"GET": _output("stderr")}),
        ("/jobs/{id:int}/rm", {"GET": rm_details}),
    ]


def create_app(open_store: Callable[[], Store], identity: Identity, clock: Clock | None = None) -> Any:
    """The ASGI application: CiGri's routes over stores made by ``open_store`` (one per worker thread)."""
    from .dashboard import routes as dashboard_routes  # the dashboard calls this module's handlers

    service = Service(open_store, identity, clock)
    router = Router(
        routes=[
            Route(path, Resource(path, service, **handlers).handle, methods=METHODS)
            for path, handlers in routes(service)
        ]
        + dashboard_routes(service),
        redirect_slashes=False,
        default=_not_found,
    )

    async def app(scope, receive, send):
        if scope["type"] == "http" and len(scope["path"]) > 1 and scope["path"].endswith("/"):
            scope = {**scope, "path": scope["path"].rstrip("/") or "/"}  # CiGri's routes take a trailing slash
        await router(scope, receive, send)

    return app


async def _not_found(scope, receive, send):
    if scope["type"] != "http":
        return
    request = Request(scope, receive)
    response = error(404, f"{request.method} {request.url.path} not found on this server", request.query_params)
    await response(scope, receive, send)
