"""gridnotify: subscriptions, and notifications that reach a real SMTP server and a real HTTP server on
127.0.0.1, each sent once, a failing server retried a bounded number of times without breaking the cycle."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

from cigri import notify
from cigri.cli import grid
from cigri.clock import RealClock
from cigri.model import CampaignState, CampaignType, EventClass, EventCode
from cigri.store import Store

from .conftest import write_jdl


class Inbox:
    """aiosmtpd's handler: keeps each mail's envelope."""

    def __init__(self):
        self.mails = []

    async def handle_DATA(self, server, session, envelope):
        self.mails.append(envelope)
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def smtp():
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    inbox.address = f"127.0.0.1:{controller.port}"
    yield inbox
    controller.stop()


@pytest.fixture
def webhook():
    received = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()
    server.server_close()
    thread.join()


def test_a_campaign_end_reaches_the_smtp_server_and_the_webhook(cli, tmp_path, smtp, webhook, monkeypatch):
    url, posts = webhook
    monkeypatch.setenv("CIGRI_SMTP", smtp.address)
    cli("gridnotify", "-m", "alice@example.org", "-s", "medium")
    cli("gridnotify", "-w", url, "-s", "low")
    campaign = cli.submit(write_jdl(tmp_path, name="sweep-42", exec_file="/bin/true", nb_jobs=2))
    cli.until_done()
    [mail] = smtp.mails
    assert mail.rcpt_tos == ["alice@example.org"]
    assert f"Subject: [cigri] campaign {campaign} sweep-42 terminated" in mail.content.decode()
    [post] = posts
    assert post["topic"] == f"campaign:{campaign}:end" and post["severity"] == "medium"
    assert "sweep-42" in post["text"]
    cli("almighty")  # a later pass sends nothing again
    assert len(smtp.mails) == 1 and len(posts) == 1


def test_severity_filters_and_cluster_events_go_to_everyone(store, smtp, monkeypatch):
    clock = RealClock()
    store.overrides = {"notify.smtp": smtp.address}
    notify.subscribe(store, "alice", notify.MAIL, "alice@example.org", "high", clock)
    notify.subscribe(store, "bob", notify.MAIL, "bob@example.org", "low", clock)
    with store.transaction():
        store.open_event(
            EventClass.CLUSTER, EventCode.CLUSTER_UNREACHABLE, "ssh: timeout", clock.now(), cluster="local"
        )
    assert notify.run(store, clock) == (2, 0)
    assert sorted(m.rcpt_tos[0] for m in smtp.mails) == ["alice@example.org", "bob@example.org"]
    assert all("CLUSTER_UNREACHABLE" in m.content.decode() for m in smtp.mails)


def test_a_failing_smtp_server_is_retried_then_given_up_without_breaking_the_cycle(cli, tmp_path, smtp, monkeypatch):
    monkeypatch.setenv("CIGRI_SMTP", f"127.0.0.1:{_free_port()}")  # nothing listens there
    monkeypatch.setenv("CIGRI_NOTIFY__ATTEMPTS", "2")
    cli("gridnotify", "-m", "alice@example.org")
    cli.submit(write_jdl(tmp_path, name="lost", exec_file="/bin/true", nb_jobs=1))
    cli.until_done()  # the cycle finishes the campaign whatever the server does
    store = Store(cli.state)
    try:
        [note] = store.notifications()
    finally:
        store.close()
    assert note["sent_at"] is None and note["attempts"] == 1 and "ConnectionRefused" in note["error"]
    monkeypatch.setenv("CIGRI_SMTP", smtp.address)
    cli("almighty")
    assert len(smtp.mails) == 1  # retried at the next pass
    cli("almighty")
    assert len(smtp.mails) == 1


def test_attempts_are_bounded(store, monkeypatch):
    clock = RealClock()
    store.overrides = {"notify.smtp": f"127.0.0.1:{_free_port()}", "notify.attempts": 2}
    notify.subscribe(store, "alice", notify.MAIL, "alice@example.org", "low", clock)
    with store.transaction():
        store.open_event(EventClass.CLUSTER, EventCode.CLUSTER_UNREACHABLE, "down", clock.now(), cluster="local")
    assert [notify.run(store, clock) for _ in range(3)] == [(0, 1), (0, 1), (0, 0)]
    assert store.notifications()[0]["attempts"] == 2


def test_subscribe_list_unsubscribe(cli):
    assert "subscribed from severity high (mail)" in cli("gridnotify", "-m", "a@example.org", "-s", "high")
    cli("gridnotify", "-w", "https://chat.example.org/hook")
    rows = cli.json("gridnotify", "-l")
    assert [(r["kind"], r["target"], r["severity"]) for r in rows] == [
        ("mail", "a@example.org", "high"),
        ("webhook", "https://chat.example.org/hook", "medium"),
    ]
    assert "1 subscription removed" in cli("gridnotify", "-u", "-m", "a@example.org")
    assert [r["kind"] for r in cli.json("gridnotify", "-l")] == ["webhook"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "not-an-address"], "-m: expected a mail address, got 'not-an-address'"),
        (["-w", "ftp://x"], "-w: expected an http:// or https:// URL, got 'ftp://x'"),
        (["-u", "-m", "none@example.org"], "no subscription of"),
        ([], "nothing to do"),
    ],
)
def test_bad_requests_are_one_line_and_write_nothing(cli, args, message):
    result = cli.runner.invoke(grid, ["--state", str(cli.state), "gridnotify", *args])
    assert result.exit_code != 0 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert cli.json("gridnotify", "-l") == []


def test_a_job_error_reaches_low_subscribers_and_its_blacklist_everyone(cli, tmp_path, smtp, monkeypatch):
    monkeypatch.setenv("CIGRI_SMTP", smtp.address)
    cli("config", "set", "blacklist.errors", "1")  # CiGri's rule: the first error closes the cluster
    cli("gridnotify", "-m", "low@example.org", "-s", "low")
    cli("gridnotify", "-m", "medium@example.org", "-s", "medium")
    campaign = cli.submit(write_jdl(tmp_path, name="failing-run", exec_file="/bin/false", nb_jobs=1))
    cli.until_done(code=13)  # ends with the campaign blocked on its event, kept off local (a BLACKLIST event)
    subjects = sorted((m.rcpt_tos[0], m.content.decode().split("Subject: ")[1].splitlines()[0]) for m in smtp.mails)
    assert subjects == [
        ("low@example.org", f"[cigri] BLACKLIST: campaign {campaign} failing-run cluster local"),
        ("low@example.org", f"[cigri] EXIT_ERROR: campaign {campaign} failing-run cluster local job 1"),
        ("medium@example.org", f"[cigri] BLACKLIST: campaign {campaign} failing-run cluster local"),
    ]


def test_each_pass_reads_only_the_campaign_ends_since_the_last(store, monkeypatch):
    """The notifier's cost grows with what ended since its last pass, not with the campaigns ever ended: a
    campaign ended before the latest end it looked at is not read again, and nothing is queued twice."""
    clock = RealClock()
    now = clock.now()
    notify.subscribe(store, "alice", notify.MAIL, "alice@example.org", "low", clock)
    with store.transaction():
        for name, ended in (("one", now + 1), ("two", now + 2)):
            campaign = store.create_campaign(name, "alice", CampaignType.DEFAULT, {}, {}, now)
            store.set_campaign_state(campaign, CampaignState.TERMINATED, ended)
    assert notify.queue(store, clock) == 2
    read: list[float] = []
    ended_since = store.ended_since
    monkeypatch.setattr(store, "ended_since", lambda since: read.append(since) or ended_since(since))
    with store.transaction():
        three = store.create_campaign("three", "alice", CampaignType.DEFAULT, {}, {}, now)
        store.set_campaign_state(three, CampaignState.TERMINATED, now + 5)
    assert notify.queue(store, clock) == 1  # three's end; two's (ended at the mark) is not queued again
    assert [c.name for c in ended_since(read[0])] == ["two", "three"]
