"""Events and their causes (CiGri's colombo): a job's error blacklists its cluster for its campaign, and
fixing the causes lifts the blacklist.

- A job's error on a cluster (EXIT_ERROR, RESUBMIT_LIMIT, ...: :func:`job_error`) is a job event. Once
  ``blacklist.errors`` of the campaign's last ``blacklist.window`` ends on that cluster failed
  (:func:`too_many_errors`; default 5 of 10, CiGri's first-error rule with 1), or at once for a job that used
  all its attempts there (RESUBMIT_LIMIT), the error also opens a
  BLACKLIST event of the campaign for that cluster, whose parent is that cause; later causes on the pair
  join it (their parent is the blacklist). While it is open
  the campaign sends no job there (:meth:`cigri.store.Store.blocked_clusters`); its other clusters go on.
- Fixing causes (:func:`close`) lifts each blacklist they belong to once none of its causes is still open;
  fixing a blacklist fixes its causes. Each closed event records why (``closed_by``).
- The admin's blacklist (ADMIN_BLACKLIST, a global event) keeps every campaign off a cluster until lifted.
- A job's error quotes what the job wrote (its stderr's end), which may show its environment: the values of
  its campaign's JDL ``environment`` are masked in it, wherever they appear, as in every event of a campaign
  (:meth:`cigri.store.Store.open_event`).

All of it in the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import config
from .model import Event, EventClass, EventCode, EventState
from .store import Store

CAUSES_FIXED = "its causes are fixed"


def job_error(
    store: Store,
    code: EventCode,
    message: str,
    now: float,
    *,
    cluster: str,
    campaign_id: int,
    job_id: int,
    close: bool = True,
) -> int:
    """Open a job's error event on ``cluster``; with ``close`` (:func:`too_many_errors`), keep the campaign off
    that cluster with it (a blacklist already open takes it as one more cause whatever). Its id."""
    blacklist = store.blacklist(campaign_id, cluster)
    event_id = store.open_event(
        EventClass.JOB,
        code,
        message,
        now,
        cluster=cluster,
        campaign_id=campaign_id,
        job_id=job_id,
        parent=None if blacklist is None else blacklist.id,
    )
    if blacklist is None and close:
        store.open_event(
            EventClass.CAMPAIGN,
            EventCode.BLACKLIST,
            f"campaign {campaign_id} sends no job to {cluster} until its errors there are fixed "
            f"(first: event {event_id}, {code.value})",
            now,
            cluster=cluster,
            campaign_id=campaign_id,
            parent=event_id,
        )
    return event_id


def too_many_errors(store: Store, cluster: str, outcomes: Mapping[int, str]) -> set[int]:
    """Note each campaign's ends on the cluster ("1" failed, "0" succeeded, in order); the campaigns of which
    ``blacklist.errors`` of the last ``blacklist.window`` ends there failed: their job errors close it."""
    settings = store.settings()
    errors = int(config.resubmit_value(settings, config.BLACKLIST_ERRORS))
    window = max(errors, int(config.resubmit_value(settings, config.BLACKLIST_WINDOW)))
    return {
        campaign_id
        for campaign_id, ends in outcomes.items()
        if store.note_cluster_ends(campaign_id, cluster, ends, window).count("1") >= errors
    }


def close(store: Store, events: Iterable[Event], now: float, by: str) -> list[Event]:
    """Close ``events`` (open ones) with the causes of the blacklists among them, then each blacklist left with
    no open cause. Returns every event closed, blacklists included."""
    chosen = {e.id: e for e in events}
    for event in list(chosen.values()):
        if event.code == EventCode.BLACKLIST:
            chosen.update((c.id, c) for c in store.causes(event) if c.state == EventState.OPEN)
    store.close_events(list(chosen), now, by)
    closed = dict(chosen)
    for blacklist in store.blacklists_of(list(chosen.values())):
        if not any(c.state == EventState.OPEN for c in store.causes(blacklist)):
            store.close_events([blacklist.id], now, CAUSES_FIXED)
            closed[blacklist.id] = blacklist
    return [closed[i] for i in sorted(closed)]
