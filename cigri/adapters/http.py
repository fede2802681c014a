"""What the REST adapters (``slurm-rest``, ``oar-rest``) share: their URL checked, one httpx client each,
every request bounded (:data:`~cigri.adapters.transport.CONNECT_TIMEOUT` to connect, the cluster's
``timeout`` for the rest), and httpx's failures mapped once to :class:`TransportError`.

A secret (a token) goes over plain ``http://`` only to this machine (127.0.0.1, ::1, localhost), or when
the cluster is set ``insecure``: anywhere else, anyone on the path could read it and act as the user.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import AdapterError, ConfigError, TransportError
from . import Option
from .transport import CONNECT_TIMEOUT

if TYPE_CHECKING:
    import httpx  # imported where it is used: a command that reaches no REST cluster never loads it

log = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "::1", "localhost")
INSECURE = Option("insecure", bool, "send the token over plain http:// to another machine (readable on the way)")


def check_url(cluster: str, url: str, *, secret: bool, insecure: bool) -> str:
    """``url`` if the adapter may use it; ConfigError (one line) if not."""
    import httpx

    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"cluster {cluster!r}: url must start with http:// or https://, not {url!r}")
    if secret and url.startswith("http://") and httpx.URL(url).host not in LOOPBACK and not insecure:
        raise ConfigError(
            f"cluster {cluster!r}: {url} is plain http, so the token would cross the network readable: "
            "use https://, or accept that with --insecure"
        )
    return url


def check_secret_url(cluster: str, adapter: type, config: dict) -> None:
    """What ``gridclusters add/set`` checks of a REST cluster's url (adapters without ``sends_secret`` have none)."""
    sends_secret = getattr(adapter, "sends_secret", None)
    if sends_secret and config.get("url"):
        check_url(cluster, str(config["url"]), secret=sends_secret(config), insecure=bool(config.get("insecure")))


def read_secret(path: str) -> str:
    """The text of a token file; a file others may read is used, with a warning (refusing it would stop a
    cron-driven grid on a chmod), since anyone who read it can act as the user."""
    file = Path(path).expanduser()
    try:
        text = file.read_text()
        mode = file.stat().st_mode & 0o777
    except OSError as exc:
        raise ConfigError(f"cannot read token_file {path}: {exc.strerror or exc}") from None
    if mode & 0o077:
        log.warning("token_file %s is readable by others (mode %s): chmod 600 %s", path, oct(mode)[2:], path)
    return text


def client(url: str, timeout: float, transport: httpx.BaseTransport | None, **settings) -> httpx.Client:
    """A client whose every request is bounded: ``timeout`` to read or write, less to connect."""
    import httpx

    bounds = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout))
    return httpx.Client(base_url=url, timeout=bounds, transport=transport, **settings)


def send(
    cluster: str, service: str, url: str, timeout: float, make: Callable[[], httpx.Client], method: str, path: str, **kw
) -> httpx.Response:
    """One request through the client ``make`` gives; a failure to get an answer is a TransportError
    naming ``service`` (e.g. "slurmrestd") at ``url``, a request no URL can carry (a path built from what
    the cluster answered, holding a control character, a lone surrogate, or far too long) an AdapterError."""
    import httpx

    try:
        return make().request(method, path, **kw)
    except (httpx.InvalidURL, UnicodeEncodeError) as exc:
        raise AdapterError(f"{cluster}: cannot ask {service} for {path[:80]!r}: {exc}") from exc
    except httpx.TimeoutException as exc:
        raise TransportError(f"{cluster}: {service} at {url} gave no answer within {timeout:g} s") from exc
    except httpx.HTTPError as exc:  # refused, unknown host, reset, TLS
        cause = str(exc) or type(exc).__name__
        raise TransportError(f"{cluster}: cannot reach {service} at {url}: {cause}") from exc
    except OSError as exc:  # a certificate file that cannot be read, when the client is made
        raise TransportError(f"{cluster}: cannot set up TLS for {url}: {exc.strerror or exc}") from exc
