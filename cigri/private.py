"""Files and folders only their owner may read: cigri's state, logs, spools and sockets are 0600/0700
whatever the umask (they name users, campaigns and clusters, and a socket or spool is a door to them); so are
the input files cigri stages and the outputs it gathers (a campaign's data is its user's)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from .errors import ConfigError

WRITE_NOFOLLOW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW  # a link planted at the name: OSError


def private_dir(path: Path) -> Path:
    """``path`` and the folders made for it, 0700 whatever the umask; refused if it is a link or another
    user owns it (someone could plant or read what goes there). A folder that exists is made 0700 too."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for made in missing:
        made.chmod(0o700)
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid():
        raise ConfigError(f"{path} belongs to uid {info.st_uid}, not to this user: cigri will not use it")
    if info.st_mode & 0o077:
        path.chmod(0o700)
    return path


def open_private(path: Path, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
    """A descriptor of ``path``, a file made (or left) 0600 whatever the umask."""
    fd = os.open(path, flags | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def write_private(path: Path, text: str) -> None:
    with open(open_private(path), "w") as handle:
        handle.write(text)


def copy_private(source: Path, target: Path) -> None:
    """``source``'s bytes into ``target``, a file made (or left) 0600 whatever the umask; a link at ``target``
    is not followed (it would send the bytes elsewhere): OSError."""
    with open(source, "rb") as data, open(open_private(target, WRITE_NOFOLLOW), "wb") as copy:
        shutil.copyfileobj(data, copy)
