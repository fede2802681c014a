"""Where ``grid serve`` listens: ``HOST:PORT`` or ``unix:PATH`` (no third-party import: the CLI checks it
without the service extra)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Listen:
    host: str | None = None
    port: int | None = None
    socket: Path | None = None

    def __str__(self) -> str:
        if self.socket is not None:
            return f"unix:{self.socket}"
        host = f"[{self.host}]" if ":" in (self.host or "") else self.host
        return f"http://{host}:{self.port}"


def parse_listen(text: str) -> Listen:
    """``HOST:PORT`` (an IP address, ``[v6]:PORT`` for IPv6) or ``unix:PATH`` (ValueError saying which)."""
    if text.startswith("unix:"):
        path = text[5:]
        if not path:
            raise ValueError("unix: needs the socket's path (unix:PATH)")
        return Listen(socket=Path(path).expanduser())
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"expected HOST:PORT or unix:PATH, got {text!r}")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if host != "localhost":
            raise ValueError(f"expected an IP address in HOST:PORT, got {host!r}") from None
    return Listen(host=host, port=int(port))
