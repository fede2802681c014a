"""The ``local`` adapter: the embedded resource manager (:mod:`cigri.adapters.local_rm`) on this machine."""

from __future__ import annotations

import contextlib
import os
import pwd
import socket
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from ..errors import AdapterError, JdlError, TransportError
from ..jdl import plain_resources, resource_slots
from ..model import Capacity, Cluster, JobSpec, KillCause, RemoteState, RemoteStatus
from ..private import write_private
from . import AdapterContext, Option, expand_home, job_environment
from .files import FILE_OPTIONS, LocalFiles
from .local_rm import Spool
from .transport import LOCAL_HOSTS, LocalRunner, read_load

# the local RM's states, translated
STATES = {
    "queued": RemoteState.PENDING,
    "held": RemoteState.PENDING,
    "running": RemoteState.RUNNING,
    "exited": RemoteState.EXITED,
    "killed": RemoteState.KILLED,
    "cancelled": RemoteState.KILLED,
    "lost": RemoteState.KILLED,
}

# why the local RM ended a job, from its reason; a killed, cancelled or lost job with any other reason (the
# daemon stopped while it ran) is OTHER
CAUSES = {
    "walltime": KillCause.WALLTIME,
    "cancelled": KillCause.ADMIN,
    "cancelled before start": KillCause.ADMIN,
}


def kill_cause(state: str, reason: str | None) -> KillCause | None:
    """Why the local RM ended a job in ``state`` with ``reason`` (None: it exited on its own)."""
    if STATES.get(state) != RemoteState.KILLED:
        return None
    return CAUSES.get(reason or "", KillCause.OTHER)


def login_environment(home: str) -> dict[str, str]:
    """What a job of this machine starts from: the environment a login gives the user the daemon runs jobs
    as, not the environment of whatever process started the daemon. ``home``: the one {HOME} stands for."""
    account = pwd.getpwuid(os.geteuid())
    return {
        "HOME": home,
        "USER": account.pw_name,
        "LOGNAME": account.pw_name,
        "SHELL": account.pw_shell or "/bin/sh",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }


def default_slots() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class LocalAdapter(LocalFiles):
    """Runs jobs as processes of this machine, ``slots`` at a time (default: the CPUs this process may use)."""

    options = (
        Option("slots", int, "job slots (default: the number of CPUs)", minimum=1),
        Option(
            "queue_depth",
            int,
            "jobs cigri may queue beyond the free slots (default: 32 x slots)",
            minimum=0,
        ),
        Option("idle_exit", int, "seconds the daemon waits without work before it exits (default 30)", minimum=1),
        *FILE_OPTIONS,
    )
    best_effort = False

    def __init__(self, cluster: Cluster, context: AdapterContext):
        self.name = cluster.name
        self.config = cluster.config
        self.clock = context.clock
        self.slots = int(cluster.config.get("slots") or default_slots())
        # in proportion to the slots, so that several local clusters share a campaign by their size,
        # and deep enough that the daemon does not starve between two passes of trivial jobs
        self.queue_depth = int(cluster.config.get("queue_depth", 32 * self.slots))
        self.spool = Spool(context.state_dir / "clusters" / cluster.name)
        self.spool.set_meta({"slots": self.slots, "idle_exit": int(cluster.config.get("idle_exit", 30))})
        self.home = os.path.expanduser("~")

    def check(self, settings: dict, path: str) -> None:
        who = f"the local cluster {self.name!r}"
        nodes, per_node = resource_slots(plain_resources(settings["resources"], f"{path}.resources", who))
        if nodes > 1:
            raise JdlError(f"{path}.resources", f"the local cluster {self.name!r} has one node, {nodes} were asked")
        if per_node > self.slots:
            raise JdlError(
                f"{path}.resources", f"{per_node} cores asked, the local cluster {self.name!r} has {self.slots}"
            )

    def capacity(self) -> Capacity:
        used, queued = self.spool.usage()
        return Capacity(total=self.slots, used=used, grid_used=used, queued=queued)

    def _nodefile(self, slots: int) -> str:
        path = self.spool.dir / f"nodefile.{slots}"
        if not path.exists():
            write_private(path, f"{socket.gethostname()}\n" * slots)
        return str(path)

    def submit(self, batch_key: str, specs: Sequence[JobSpec]) -> list[str]:
        jobs = []
        for spec in specs:
            cwd = expand_home(spec.directory, self.home)
            argv = [expand_home(spec.argv[0], self.home), *spec.argv[1:]]
            env = {**login_environment(self.home), **job_environment(spec, cwd, self._nodefile(spec.slots))}
            job = {"argv": argv, "cwd": cwd, "env": env, "walltime": spec.walltime, "slots": spec.slots}
            if spec.checkpoint_signal:  # the daemon sends it a grace before the walltime
                job |= {"signal": spec.checkpoint_signal, "grace": spec.checkpoint_grace}
            jobs.append(job)
        ids = self.spool.submit(batch_key, jobs, self.clock.now())
        self.spool.ensure_daemon()
        return [str(i) for i in ids]

    def find_batch(self, batch_key: str) -> list[str] | None:
        ids = self.spool.find_batch(batch_key)
        return None if ids is None else [str(i) for i in ids]

    def states(self, remote_ids: Sequence[str]) -> dict[str, RemoteStatus]:
        self.spool.ensure_daemon()  # a daemon that died is restarted by the next pass
        out = {rid: RemoteStatus(rid, RemoteState.UNKNOWN) for rid in remote_ids}
        for job_id, state, code, started, ended, reason in self.spool.rows([int(r) for r in remote_ids]):
            cause = kill_cause(state, reason)
            out[str(job_id)] = RemoteStatus(str(job_id), STATES[state], code, started, ended, reason or "", cause=cause)
        return out

    def cancel(self, remote_ids: Sequence[str]) -> None:
        self.spool.cancel([int(r) for r in remote_ids], self.clock.now())
        self.spool.ensure_daemon()

    def hold(self, remote_ids: Sequence[str]) -> None:
        self.spool.hold([int(r) for r in remote_ids])

    def release(self, remote_ids: Sequence[str]) -> None:
        self.spool.release([int(r) for r in remote_ids])
        self.spool.ensure_daemon()

    def tail(self, remote_id: str, stream: str, lines: int) -> str:
        path = self.spool.out_path(int(remote_id), stream)
        return tail_file(path, lines)

    def details(self, remote_id: str) -> dict:
        record = self.spool.job_record(int(remote_id)) if remote_id.isdigit() else None
        if record is None:
            raise AdapterError(f"{self.name}: the local cluster holds no job {remote_id}")
        return record

    # packing (cigri.adapters.packing): the files of packed jobs, in the spool
    def pack_dir(self) -> str:
        return str(self.spool.dir / "out" / "packed")

    def pack_home(self) -> str:
        return self.home

    def outputs(self, remote_ids: Sequence[str]) -> dict[str, str]:
        out = {}
        for rid in remote_ids:
            with contextlib.suppress(FileNotFoundError):
                out[rid] = self.spool.out_path(int(rid), "stdout").read_text(errors="replace")
        return out

    def touch(self, paths: Sequence[str]) -> None:
        for path in paths:
            Path(path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            Path(path).touch()

    def tail_path(self, path: str, lines: int) -> str:
        return tail_file(Path(path), lines)

    def node_cores(self) -> int:
        return self.slots

    def output_path(self, remote_id: str, stream: str) -> Path:
        return self.spool.out_path(int(remote_id), stream)

    def activity(self) -> object:
        return self.spool.data_version()

    def server_load(self, host: str) -> float:
        """The 1-minute load of a file-server host (a flow sensor): this machine's when ``host`` is localhost,
        else read through ssh from here."""
        if host not in LOCAL_HOSTS:
            return read_load(LocalRunner(), host, self.name)
        try:
            return os.getloadavg()[0]
        except OSError as exc:
            raise TransportError(f"{self.name}: cannot read this machine's load: {exc}") from exc

    def stop(self) -> None:
        self.spool.stop_daemon()

    def close(self) -> None:
        self.spool.close()


def tail_file(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a file, reading only its end."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(deque(text.splitlines(), maxlen=lines)) if lines else text
