"""Whose state this is. A state file chooses programs that cigri runs (a cluster's ``bin_dir`` commands, local
jobs, work generators, prologues), so cigri opens only a state that the running user owns, in a folder no other
user may write (else they could put another file in its place, or remove the spools' folder so that cigri makes
a fresh one), and reads a configuration file (which can declare clusters) on the same terms. Root's folders
(``/var/lib``) and sticky ones (``/tmp``) are safe folders: no one else renames a file there.

Running another user's state is their programs running with your rights: refused, unless you name its owner
on purpose with ``--trust-owner NAME`` (an admin's explicit choice). The right way to run someone's cycle is as
them: their crontab, or ``runuser -u NAME -- grid almighty``."""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from .errors import PermissionDenied, StoreError

HOW = "run cigri as its owner (runuser -u {owner} -- grid ...), or trust them on purpose with --trust-owner {owner}"


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_state(path: Path, trusted: str | None = None) -> None:
    """Refuse the state file at ``path`` (existing or to be made) if another user than the running one (or
    ``trusted``, the owner named on purpose) owns it or its folder, or if others may write its folder."""
    folder = path.absolute().parent
    if (info := _stat(path)) is not None:
        _check(path, info, "state file", trusted)
    if (info := _stat(folder)) is not None:
        _check(folder, info, "the state's folder", trusted, folder=True)


def check_config(path: Path, trusted: str | None = None) -> None:
    """Refuse a configuration file that another user owns or may write (it may declare clusters, and so the
    programs a pass runs). Root's files are the admin's: accepted."""
    if (info := _stat(path)) is not None:
        _check(path, info, "configuration file", trusted)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):  # nothing there yet: opening it says why it cannot be made
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None


def _check(path: Path, info: os.stat_result, what: str, trusted: str | None, *, folder: bool = False) -> None:
    me = os.geteuid()
    allowed = {me, 0} if folder or what.startswith("configuration") else {me}
    if info.st_uid not in allowed:
        owner = user_name(info.st_uid)
        if owner != trusted:
            raise PermissionDenied(
                f"{what} {path} belongs to {owner}, not to {user_name(me)}: its programs would run with your "
                f"rights; {HOW.format(owner=owner)}"
            )
    sticky = folder and info.st_mode & stat.S_ISVTX
    if info.st_mode & 0o022 and not sticky:
        raise PermissionDenied(
            f"{what} {path} may be written by other users (mode {stat.filemode(info.st_mode)}): they could choose "
            f"the programs cigri runs; make it writable by its owner only (chmod go-w {path})"
        )
