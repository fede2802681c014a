"""uvicorn serving the API on HOST:PORT or on a Unix socket. On a socket each connection's peer is named by the
kernel (:func:`cigri.service.identity.peer_user`): uvicorn makes one protocol object per connection, and the
one here hands the application a scope naming that peer."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
from pathlib import Path

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..errors import CigriError
from .identity import PEER, peer_user
from .listen import Listen


class _PeerApp:
    """The application, told who is at the other end of this connection."""

    def __init__(self, app, user: str | None):
        self.app = app
        self.user = user

    async def __call__(self, scope, receive, send):
        scope = {**scope, "extensions": {**(scope.get("extensions") or {}), PEER: self.user}}
        await self.app(scope, receive, send)


class PeerProtocol(H11Protocol):
    """HTTP/1.1 on a Unix socket, each connection's requests carrying its peer's login name."""

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        self.app = _PeerApp(self.app, peer_user(sock) if sock is not None else None)


def serve(app, listen: Listen) -> None:
    """Serve until SIGINT or SIGTERM. The address is bound here, so that a refusal is one line (CigriError). A
    socket's file is made connectable by every local user (the peer's credentials say who they are) and
    removed at the end."""
    sock = _bind(listen)
    protocol = PeerProtocol if listen.socket is not None else "h11"
    config = uvicorn.Config(app, http=protocol, lifespan="off", log_config=None, access_log=False)
    # uvicorn stops gracefully on SIGTERM, then raises it again once its own handler is gone: this one lets
    # the socket's file be removed (and a SIGTERM before uvicorn listens ends the service as well)
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
        if listen.socket is not None:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISSOCK(listen.socket.lstat().st_mode):
                    listen.socket.unlink()


def _stopped(signum, frame) -> None:
    raise SystemExit(0)


def _bind(listen: Listen) -> socket.socket:
    if listen.socket is not None:
        _clear_socket(listen.socket)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        where: object = str(listen.socket)
    else:
        family = socket.AF_INET6 if ":" in listen.host else socket.AF_INET
        # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on each connection (it checks the protocol):
        # without it an answer's body waited for the client's delayed ACK of its headers, 40 ms a request
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        where = (listen.host, listen.port)
    try:
        sock.bind(where)
        if listen.socket is not None:
            os.chmod(listen.socket, 0o666)
    except OSError as exc:
        sock.close()
        raise CigriError(f"cannot listen on {listen}: {exc.strerror}") from exc
    return sock


def _clear_socket(path: Path) -> None:
    """A socket left by a service that died goes; a live one, or anything else there, is refused."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise CigriError(f"{path} exists and is not a socket: choose another path for --listen unix:PATH")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            os.unlink(path)  # no one listens there
            return
    raise CigriError(f"{path}: another service listens on this socket")
