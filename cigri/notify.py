"""gridnotify's notifications (issue 14, item 3): campaign ends, events and blacklists, by mail or webhook.

CiGri's judas told subscribers by mail or jabber; cigri tells them by mail (SMTP, the server from
``notify.smtp``, ``CIGRI_SMTP=host:port`` overriding it) or by a webhook (a JSON POST of ``text``,
``subject``, ``severity`` and ``topic``: chat systems take ``text``).

Each pass of the almighty (:func:`run`, after the cycle's stages) queues what happened since the last pass
for each subscription that wants it, then sends what is queued. A subscription gets the topics of its
user's campaigns, and the cluster events (which belong to no campaign), from the severity it asked for up:

- high: a cluster unreachable, a blacklist (BLACKLIST, ADMIN_BLACKLIST, BLACK_HOLE), a campaign paused by
  its failure rate (FAILURE_RATE), a rejected submission (SUBMIT_ERROR);
- medium: a campaign's end (terminated or cancelled), a job out of attempts (RESUBMIT_LIMIT), a prologue's or
  epilogue's error, a test job that did not start; any event code not listed here;
- low: a job's non-zero exit (EXIT_ERROR).

Each (subscription, topic) is sent once: the state's outbox records it. A server that fails leaves it queued,
tried again at the next pass, ``notify.attempts`` times in all; a failure is logged, never raised: the cycle
goes on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from . import config
from .clock import Clock
from .errors import CigriError, ConfigError
from .model import Campaign, Event, EventCode
from .store import Store

log = logging.getLogger("cigri.notify")

SEVERITIES = ("low", "medium", "high")
MAIL, WEBHOOK = "mail", "webhook"
EVENT_SEVERITY: dict[EventCode, str] = {
    EventCode.EXIT_ERROR: "low",
    EventCode.RESUBMIT_LIMIT: "medium",
    EventCode.PROLOGUE_ERROR: "medium",
    EventCode.EPILOGUE_ERROR: "medium",
    EventCode.TEST_NOT_STARTED: "medium",
    EventCode.SUBMIT_ERROR: "high",
    EventCode.CLUSTER_UNREACHABLE: "high",
    EventCode.BLACK_HOLE: "high",
    EventCode.BLACKLIST: "high",
    EventCode.ADMIN_BLACKLIST: "high",
    EventCode.FAILURE_RATE: "high",
    EventCode.INPUT_CHANGED: "high",  # pauses its campaign, as FAILURE_RATE does
    EventCode.OUTPUT_ERROR: "medium",
    EventCode.MANUAL: "high",  # the admin marked a job: its campaign waits on its owner
}
CAMPAIGN_END = "medium"
_ADDRESS = re.compile(r"^[^@\s]+@[^@\s]+$")
_URL = re.compile(r"^https?://[^\s/]+(/\S*)?$")


def severity_of(code: EventCode) -> str:
    """An event code's severity (medium for a code this table does not list)."""
    return EVENT_SEVERITY.get(code, "medium")


def check_target(kind: str, target: str) -> None:
    """A mail address, or an http(s) URL for a webhook (ConfigError naming the option otherwise)."""
    if kind == MAIL and not _ADDRESS.match(target):
        raise ConfigError(f"-m: expected a mail address, got {target!r}")
    if kind == WEBHOOK and not _URL.match(target):
        raise ConfigError(f"-w: expected an http:// or https:// URL, got {target!r}")


def subscribe(store: Store, user: str, kind: str, target: str, severity: str, clock: Clock) -> bool:
    """Subscribe (or change the severity of) ``user``'s target; whether it is new. It is told what happens
    from now on."""
    check_target(kind, target)
    if severity not in SEVERITIES:
        raise ConfigError(f"-s: expected one of {', '.join(SEVERITIES)}, got {severity!r}")
    with store.transaction():
        return store.subscribe(user, kind, target, severity, clock.now())


def _wants(subscription: Mapping[str, Any], severity: str, user: str | None, at: float) -> bool:
    return (
        SEVERITIES.index(severity) >= SEVERITIES.index(subscription["severity"])
        and (user is None or user == subscription["user"])
        and at >= subscription["created_at"]
    )


def _event_note(event: Event, campaign: str | None) -> tuple[str, str]:
    where = " ".join(
        part
        for part in (
            f"campaign {event.campaign_id} {campaign}" if event.campaign_id is not None else "",
            f"cluster {event.cluster}" if event.cluster else "",
            f"job {event.job_id}" if event.job_id is not None else "",
        )
        if part
    )
    subject = f"[cigri] {event.code.value}: {where}"
    return subject, f"Event {event.id} ({event.code.value}, {where}):\n{event.message}\n\nSee: gridevents -e {event.id}"


def _end_note(campaign: Campaign) -> tuple[str, str]:
    subject = f"[cigri] campaign {campaign.id} {campaign.name} {campaign.state.value}"
    return subject, f"Campaign {campaign.id} ({campaign.name}) of {campaign.user} is {campaign.state.value}.\n"


def queue(store: Store, clock: Clock) -> int:
    """Queue the notifications of what happened since the last pass; how many were queued."""
    subscriptions = store.subscriptions()
    mark = store.notify_mark()
    events = store.events_after(mark)
    if not subscriptions:
        if events:
            with store.transaction():
                store.set_notify_mark(events[-1][0].id)
        return 0
    now = clock.now()
    notes: list[tuple[dict, str, str, str, str]] = []
    for event, user, campaign in events:
        severity = severity_of(event.code)
        subject, body = _event_note(event, campaign)
        for sub in subscriptions:
            if _wants(sub, severity, user, event.created_at):
                notes.append((sub, f"event:{event.id}", severity, subject, body))
    # campaign ends from the last one looked at (ends at the same instant are seen again: each topic is queued
    # once), and never from before the oldest subscription
    ended = store.ended_since(max(store.notify_end_mark(), min(s["created_at"] for s in subscriptions)))
    for campaign in ended:
        subject, body = _end_note(campaign)
        for sub in subscriptions:
            if _wants(sub, CAMPAIGN_END, campaign.user, campaign.ended_at):
                notes.append((sub, f"campaign:{campaign.id}:end", CAMPAIGN_END, subject, body))
    queued = 0
    with store.transaction():
        for sub, topic, severity, subject, body in notes:
            queued += store.queue_notification(sub["id"], topic, severity, subject, body, now)
        if events:
            store.set_notify_mark(events[-1][0].id)
        if ended:
            store.set_notify_end_mark(max(campaign.ended_at for campaign in ended))
    return queued


def send_mail(settings: Mapping[str, Any], to: str, subject: str, body: str) -> None:
    """One mail through the configured SMTP server (CigriError when none is configured)."""
    import smtplib
    from email.message import EmailMessage

    server = config.smtp_server(settings)
    if server is None:
        raise CigriError(f"{config.SMTP} is not configured (nor CIGRI_SMTP)")
    message = EmailMessage()
    message["From"] = settings.get("notify.sender", config.NOTIFY_DEFAULTS["notify.sender"])
    message["To"] = to
    message["Subject"] = subject
    message.set_content(body)
    with smtplib.SMTP(*server, timeout=config.notify_number(settings, "notify.timeout")) as smtp:
        smtp.send_message(message)


def post_webhook(settings: Mapping[str, Any], url: str, note: Mapping[str, Any]) -> None:
    """One JSON POST: ``text`` (subject and body), ``subject``, ``severity``, ``topic``; a 2xx answer is sent."""
    import httpx

    payload = {
        "text": f"{note['subject']}\n{note['body']}",
        "subject": note["subject"],
        "severity": note["severity"],
        "topic": note["topic"],
    }
    response = httpx.post(url, json=payload, timeout=config.notify_number(settings, "notify.timeout"))
    response.raise_for_status()


def deliver(store: Store, clock: Clock) -> tuple[int, int]:
    """Send what is queued, each notification in its own short transaction; (sent, failed)."""
    settings = store.settings()
    attempts = config.notify_number(settings, "notify.attempts")
    notes = store.unsent_notifications(attempts)
    if not notes:
        return 0, 0
    import smtplib  # the senders' libraries: a pass with nothing to send loads neither

    import httpx

    sent = failed = 0
    for note in notes:
        try:
            if note["kind"] == MAIL:
                send_mail(settings, note["target"], note["subject"], note["body"])
            else:
                post_webhook(settings, note["target"], note)
        except (OSError, smtplib.SMTPException, httpx.HTTPError, CigriError) as exc:
            failed += 1
            left = attempts - note["attempts"] - 1
            log.warning(
                "notification %s to %s failed (%s left): %s", note["topic"], note["target"], left, exc or type(exc)
            )
            with store.transaction():
                store.notification_failed(note["id"], f"{type(exc).__name__}: {exc}")
            continue
        sent += 1
        with store.transaction():
            store.notification_sent(note["id"], clock.now())
    return sent, failed


def run(store: Store, clock: Clock) -> tuple[int, int]:
    """Queue then send (the almighty's last step of each pass); (sent, failed)."""
    queue(store, clock)
    return deliver(store, clock)
