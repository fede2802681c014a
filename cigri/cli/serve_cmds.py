"""grid serve: CiGri's REST API over the state file (issue 25, items 1 and 2)."""

from __future__ import annotations

import click

from ..errors import CigriError
from .app import GridCommand, app, common

DEFAULT_LISTEN = "127.0.0.1:8080"


def _listen(ctx: click.Context, param: click.Parameter, value: str):
    from ..service.listen import parse_listen

    try:
        return parse_listen(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def _trusted(ctx: click.Context, param: click.Parameter, value: str):
    from ..service.identity import parse_trusted

    try:
        return parse_trusted(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


@click.command("serve", cls=GridCommand)
@click.option(
    "--listen",
    default=DEFAULT_LISTEN,
    show_default=True,
    callback=_listen,
    metavar="HOST:PORT|unix:PATH",
    help="Where to listen: an address and port, or a Unix socket (its peers are named by their credentials).",
)
@click.option(
    "--user-header",
    default="X-CIGRI-USER",
    show_default=True,
    metavar="NAME",
    help="The header in which the front proxy names the authenticated user.",
)
@click.option(
    "--trusted",
    default="127.0.0.1",
    show_default=True,
    callback=_trusted,
    metavar="ADDR[,ADDR...]",
    help="The proxies whose user header is believed; from any other address a request is anonymous.",
)
@common
def serve(listen, user_header, trusted):
    """Serve CiGri's REST API over the state file, until SIGINT or SIGTERM.

    The routes are CiGri's (GET /, /clusters, /campaigns, /campaigns/ID and its jdl,
    jobs, events; POST /campaigns with a JSON JDL; PUT and DELETE /campaigns/ID;
    /events/ID, /jobs/ID and its stdout and stderr, /notifications, /gridusage).
    Every answer is JSON with links; ?pretty indents it.

    Who asks: on HOST:PORT, the user the front proxy names in --user-header, believed
    only from the --trusted addresses; on unix:PATH, the connecting process's user
    (its credentials: no password). Anyone else reads what gridstat and gridevents
    show anyone and changes nothing. A campaign is changed by its owner or root, as
    with the commands. TLS and authentication are the proxy's job: keep the default
    127.0.0.1 unless a proxy stands in front.

    The service does not run the cycle: run grid almighty beside it, from the same
    user's cron or as grid almighty --loop. It needs the service extra
    (pip install 'cigri[service]').

    \b
    Example:
        grid serve
        grid serve --listen unix:/run/cigri/api.sock
        grid serve --listen 127.0.0.1:8080 --trusted 127.0.0.1,10.0.0.5
        curl -H 'X-CIGRI-USER: alice' http://127.0.0.1:8080/campaigns?pretty
    """
    try:
        from .. import configfile
        from ..service.app import create_app
        from ..service.server import serve as run
    except ImportError as exc:
        missing = (exc.name or "starlette").split(".")[0]
        raise CigriError(
            f"grid serve needs the service extra: pip install 'cigri[service]' (missing: {missing})"
        ) from None
    a = app()
    a.setup_logging()  # the service's errors are logged with their secrets masked, as the commands' are
    store = a.store  # refused, as by every command, when another user owns it
    layers = a.layers
    state, trust_owner = store.path, a.trust_owner

    def open_store():
        from ..store import Store

        opened = Store(state, trust_owner=trust_owner)
        configfile.attach(opened, layers)
        return opened

    from ..service.identity import Identity

    identity = Identity(header=user_header, trusted=trusted)
    click.echo(f"grid serve: {state} on {listen}; user header {user_header} from {', '.join(trusted)}", err=True)
    run(create_app(open_store, identity, a.clock), listen)
