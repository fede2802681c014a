"""Who makes a request. TLS and passwords are the front proxy's job, as at CiGri's sites: the proxy
authenticates the user and names them in a header (``X-CIGRI-USER`` by default), which is believed only when
the connection comes from one of the trusted addresses. On a Unix socket the kernel names the peer
(SO_PEERCRED): the login name of its uid, so that local users need no password; a header there means nothing.
Anyone else is anonymous: they read what the commands show anyone, and change nothing."""

from __future__ import annotations

import ipaddress
import pwd
import re
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass

PEER = "cigri.peer"  # the ASGI scope's extension holding a Unix socket peer's login name (None: unknown uid)
DEFAULT_HEADER = "X-CIGRI-USER"
DEFAULT_TRUSTED = ("127.0.0.1",)
# a login name as useradd takes it; CiGri also took "unknown" and "null" for no one
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?")
_NO_ONE = {"unknown", "null"}


def parse_trusted(text: str) -> tuple[str, ...]:
    """``ADDR[,ADDR...]``: IP addresses (ValueError naming a bad one)."""
    addresses = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            addresses.append(str(ipaddress.ip_address(item)))
        except ValueError:
            raise ValueError(f"{item!r} is not an IP address") from None
    if not addresses:
        raise ValueError("no address given")
    return tuple(addresses)


def login_name(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def peer_user(sock: socket.socket) -> str | None:
    """The login name of the process at the other end of a Unix socket (None when its uid has none)."""
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return login_name(uid)


@dataclass(frozen=True)
class Identity:
    """How requests are attributed: the proxy's header and the addresses it is believed from."""

    header: str = DEFAULT_HEADER
    trusted: tuple[str, ...] = DEFAULT_TRUSTED

    def user(self, scope: Mapping, headers: Mapping[str, str]) -> str | None:
        """The user making the request described by an ASGI ``scope`` and its ``headers``, or None."""
        extensions = scope.get("extensions") or {}
        if PEER in extensions:
            return extensions[PEER]
        client = scope.get("client")
        if not client or not self._is_trusted(client[0]):
            return None
        name = headers.get(self.header)
        if name is None or name.lower() in _NO_ONE or not _USER.fullmatch(name):
            return None
        return name

    def _is_trusted(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        return str(address) in self.trusted
