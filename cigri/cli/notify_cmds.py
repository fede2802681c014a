"""gridnotify: subscribe to notifications by mail or webhook, list, unsubscribe (issue 14, item 3)."""

from __future__ import annotations

import click

from .. import notify
from ..errors import CigriError, NotFound
from . import output
from .app import GridCommand, app, common, server_option


@click.command("gridnotify", cls=GridCommand)
@click.option("-m", "--mail", "address", metavar="ADDRESS", help="Subscribe (or unsubscribe, with -u) this address.")
@click.option("-w", "--webhook", "url", metavar="URL", help="Subscribe (or unsubscribe) a webhook: a JSON POST.")
@click.option(
    "-s",
    "--severity",
    type=click.Choice(notify.SEVERITIES),
    default="medium",
    show_default=True,
    help="Be told from this severity up.",
)
@click.option("-l", "--list", "listing", is_flag=True, help="List your subscriptions.")
@click.option("-u", "--unsubscribe", is_flag=True, help="Unsubscribe -m/-w's target, or all of yours without.")
@click.option("--json", "as_json", is_flag=True, help="With -l: JSON output.")
@server_option
@common
def gridnotify(address, url, severity, listing, unsubscribe, as_json):
    """Be told by mail or webhook when your campaigns end, and of events and
    blacklists. The almighty sends them at the end of each pass.

    \b
    Severities (a subscription gets its own and those above):
        high    a cluster unreachable, a blacklist (BLACKLIST, ADMIN_BLACKLIST,
                BLACK_HOLE), FAILURE_RATE, SUBMIT_ERROR
        medium  a campaign's end, RESUBMIT_LIMIT, PROLOGUE_ERROR, EPILOGUE_ERROR,
                TEST_NOT_STARTED
        low     EXIT_ERROR (a job's non-zero exit)

    Mails go through notify.smtp (grid config; CIGRI_SMTP=host:port overrides it).
    A webhook gets a JSON POST with text, subject, severity and topic. Each
    notification is sent once; a failing server is tried again at the next
    passes (notify.attempts times in all).

    With --server (or CIGRI_SERVER) the subscriptions are kept by a grid serve
    service, as the user it knows you by.

    \b
    Example:
        gridnotify -m alice@example.org -s high
        gridnotify -w https://chat.example.org/hooks/abc -s medium
        gridnotify -l
        gridnotify -u -m alice@example.org
        gridnotify --server unix:/run/cigri/api.sock -l
    """
    source = app().source
    if address and url:
        raise CigriError("give -m ADDRESS or -w URL, not both")
    kind, target = (notify.MAIL, address) if address else (notify.WEBHOOK, url) if url else (None, None)
    if listing:
        if target or unsubscribe:
            raise CigriError("-l lists: give it alone")
        rows = source.subscriptions()
        if as_json:
            output.emit_json(rows)
            return
        output.table(
            ["Id", "Kind", "Target", "Severity"], [[r["id"], r["kind"], r["target"], r["severity"]] for r in rows]
        )
        return
    if unsubscribe:
        removed = source.unsubscribe(kind, target)
        if not removed:  # the service knows who you are by your socket or your proxy: say yours
            raise NotFound("no subscription of yours" + (f" for {target}" if target else ""))
        click.echo(f"{removed} subscription{'s' if removed > 1 else ''} removed")
        return
    if target is None:
        raise CigriError("nothing to do: give -m ADDRESS, -w URL, -l or -u (see gridnotify --help)")
    new = source.subscribe(kind, target, severity)
    click.echo(f"{target} {'subscribed' if new else 'now'} from severity {severity} ({kind})")
