"""Files to and from a cluster (issue 13): staging input files into its cache, gathering outputs back.

An adapter that can move files offers :class:`FileAccess`; ``local`` by plain copies on this machine,
``slurm-ssh`` and ``oar-ssh`` through their command runner (ssh, or local on a login node): the bytes travel
as base64 on the command's stdin or stdout, in blocks, and ``sha256sum`` runs on the cluster, so that the
checksum proves the copy there, not the one sent. The REST adapters have no file path: a campaign with input
or output files does not use them (:func:`cigri.campaigns.check_clusters`).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ..errors import AdapterError, ConfigError
from ..model import DataFile
from ..private import WRITE_NOFOLLOW, copy_private, open_private, private_dir
from . import Option, expand_home

BLOCK = 4 * 1024 * 1024  # bytes per command when staging through a transport (base64: a third more)
DEFAULT_CACHE_DIR = "~/.cigri/cache"

FILE_OPTIONS = (
    Option(
        "cache_dir", str, f"folder of staged input files on the cluster's shared storage (default {DEFAULT_CACHE_DIR})"
    ),
    Option("cache_quota", int, "bytes the cache may hold (default: no quota)", minimum=1),
)


class FileAccess(Protocol):
    def cache_dir(self) -> str: ...

    def put_file(self, source: Path, target: str, expected: DataFile) -> str: ...

    def get_file(self, source: str, target: Path) -> str | None: ...

    def remove_paths(self, paths: Sequence[str]) -> None: ...

    def job_path(self, directory: str, name: str) -> str: ...


NO_FILE_PATH = (
    "this cluster's adapter has no file path (REST without ssh): it cannot stage input_files nor gather outputs"
)


def can_move_files(adapter: object) -> bool:
    """Whether the adapter moves files (:class:`FileAccess`); an adapter whose transfers need an optional
    transport (slurm-rest's ssh) says whether it has it in ``moves_files``."""
    return hasattr(adapter, "put_file") and getattr(adapter, "moves_files", True)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _why(exc: OSError | ConfigError) -> str:
    return (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)


class ClusterPaths:
    """Where files are on a cluster: its cache folder and a job's files, from the adapter's ``home`` and
    ``config``."""

    home: str
    config: dict

    def cache_dir(self) -> str:
        folder = expand_home(self.config.get("cache_dir") or DEFAULT_CACHE_DIR, self.home)
        return folder if folder.startswith("/") else f"{self.home}/{folder}"

    def job_path(self, directory: str, name: str) -> str:
        return os.path.join(expand_home(directory, self.home), name)


class LocalFiles(ClusterPaths):
    """Plain copies on this machine (``home`` is the adapter's)."""

    def put_file(self, source: Path, target: str, expected: DataFile) -> str:
        """Copy ``source`` to ``target`` (through a temporary name, so that no job reads half a file), private
        (folders 0700, file 0600); the copy's sha256. ``expected`` (what the file should be) is for adapters
        that copy nothing: the simulator's."""
        try:
            private_dir(Path(target).parent)
            partial = f"{target}.part"
            copy_private(source, Path(partial))
            checksum = sha256_of(Path(partial))
            os.replace(partial, target)
        except (OSError, ConfigError) as exc:
            raise AdapterError(f"{getattr(self, 'name', 'local')}: cannot stage {target}: {_why(exc)}") from exc
        return checksum

    def get_file(self, source: str, target: Path) -> str | None:
        """Copy ``source`` back to ``target``, private (the folders made for it 0700, the file 0600); its
        sha256 read at the source, or None when it is not there."""
        if not os.path.isfile(source):
            return None
        try:
            checksum = sha256_of(Path(source))
            private_dir(target.parent)
            copy_private(Path(source), target)
        except (OSError, ConfigError) as exc:
            raise AdapterError(f"{getattr(self, 'name', 'local')}: cannot copy {source}: {_why(exc)}") from exc
        return checksum

    def remove_paths(self, paths: Sequence[str]) -> None:
        for path in paths:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise AdapterError(f"{getattr(self, 'name', 'local')}: cannot delete {path}: {exc.strerror}") from exc


# the cluster side of a transfer, in sh: bytes arrive as base64 on stdin and are appended to the partial file;
# the last block renames it into place and prints its checksum. Under umask 077 the folders and the copy are
# private; a partial file left by an earlier run is removed, not truncated (truncating keeps its mode)
_PUT = 'set -e; umask 077; mkdir -p "$(dirname "$1")"; [ "$2" = first ] && rm -f "$1.part"; base64 -d >> "$1.part"; '
_PUT_LAST = _PUT + 'mv -f "$1.part" "$1"; sha256sum "$1" | cut -d" " -f1'
_GET_HEAD = '[ -f "$1" ] || { echo "missing" >&2; exit 3; }; wc -c < "$1"; sha256sum "$1" | cut -d" " -f1'
_GET_BLOCK = 'dd if="$1" bs="$2" skip="$3" count=1 2>/dev/null | base64'


class RemoteFiles(ClusterPaths):
    """File moves through the adapter's command runner (see the module's docstring). The adapter gives
    ``_run``, ``home``, ``config`` and ``name`` (:class:`~cigri.adapters.transport.RemoteCommands`)."""

    name: str

    def put_file(self, source: Path, target: str, expected: DataFile) -> str:
        try:
            with open(source, "rb") as handle:
                block, first = handle.read(BLOCK), True
                while True:
                    following = handle.read(BLOCK)
                    checksum = self._send(target, block, first=first, last=not following)
                    if not following:
                        return checksum
                    block, first = following, False
        except OSError as exc:
            raise AdapterError(f"{self.name}: cannot read {source}: {exc.strerror}") from exc

    def _send(self, target: str, block: bytes, *, first: bool, last: bool) -> str:
        """One block of a file to the cluster; the last one answers the checksum computed there."""
        result = self._run(
            ["sh", "-c", _PUT_LAST if last else _PUT, "sh", target, "first" if first else "more"],
            input=base64.b64encode(block).decode(),
        )
        if not result.ok:
            raise AdapterError(f"{self.name}: cannot stage {target}: {result.describe()}")
        return result.stdout.strip()

    def get_file(self, source: str, target: Path) -> str | None:
        """``source``'s size and checksum first, then one block per command, as put_file sends them: an
        output never sits whole in memory. The copy is ``target`` only once whole; a block of the wrong size
        (the file changed or went while it was read) is an error, and no partial copy stays."""
        head = self._run(["sh", "-c", _GET_HEAD, "sh", source])
        if head.returncode == 3 and "missing" in head.stderr:
            return None
        if not head.ok:
            raise AdapterError(f"{self.name}: cannot read {source}: {head.describe()}")
        size, _, checksum = head.stdout.strip().partition("\n")
        if not size.strip().isdigit():
            raise AdapterError(f"{self.name}: cannot read {source}: its size reads {size.strip()!r}")
        partial = target.with_name(f"{target.name}.part")
        try:
            private_dir(target.parent)
            with open(open_private(partial, WRITE_NOFOLLOW), "wb") as out:
                left = int(size)
                for index in range(-(-left // BLOCK)):
                    out.write(self._receive(source, index, min(BLOCK, left)))
                    left -= BLOCK
            os.replace(partial, target)
        except (OSError, ConfigError) as exc:
            raise AdapterError(f"{self.name}: cannot write {target}: {_why(exc)}") from exc
        finally:
            partial.unlink(missing_ok=True)
        return checksum.strip()

    def _receive(self, source: str, index: int, expected: int) -> bytes:
        """Block ``index`` of a file on the cluster, which must hold ``expected`` bytes."""
        result = self._run(["sh", "-c", _GET_BLOCK, "sh", source, str(BLOCK), str(index)])
        try:
            block = base64.b64decode(result.stdout) if result.ok else None
        except ValueError:
            block = None
        if block is None or len(block) != expected:
            why = result.describe() if not result.ok else "it changed or went while it was read"
            raise AdapterError(f"{self.name}: cannot read {source}: {why}")
        return block

    def remove_paths(self, paths: Sequence[str]) -> None:
        if not paths:
            return
        result = self._run(["sh", "-c", 'rm -f -- "$@"', "sh", *paths])
        if not result.ok:
            raise AdapterError(f"{self.name}: cannot delete {shlex.join(paths[:3])}...: {result.describe()}")
