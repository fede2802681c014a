"""The embedded resource manager behind the ``local`` adapter: real processes on this machine.

Each local cluster has a spool directory holding a small SQLite queue (``rm.db``), the jobs' stdout and
stderr, and a detached daemon that starts queued jobs as slots free up, enforces walltimes and records
exit statuses for the next almighty pass to collect. The daemon is woken through a FIFO when jobs are
queued or cancelled and through SIGCHLD when a job ends, so it never polls; it exits after a while
without work and is started again on demand.

A job that checkpoints by signal gets its signal (its ``ckpt_signal``, ``ckpt_grace`` seconds before its
walltime) from the daemon itself, to its process group, as Slurm's ``--signal`` and OAR's ``--checkpoint``
do; at the walltime it is killed (SIGTERM, then SIGKILL) as any job.

Lost wake-ups are impossible: a client commits its rows, then writes to the FIFO; finding no reader
(ENXIO) it starts a daemon, which waits for the lock. A daemon that goes idle first closes the FIFO,
then looks for work once more before it releases the lock.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..private import open_private, private_dir, write_private

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY,
    batch TEXT NOT NULL,
    argv TEXT NOT NULL,
    cwd TEXT NOT NULL,
    env TEXT NOT NULL,
    walltime INTEGER NOT NULL,
    slots INTEGER NOT NULL,
    state TEXT NOT NULL,            -- queued, held, running, exited, killed, cancelled, lost
    cancel INTEGER NOT NULL DEFAULT 0,
    pid INTEGER,
    pid_start TEXT,
    exit_code INTEGER,
    reason TEXT,
    queued_at REAL NOT NULL,
    started_at REAL,
    ended_at REAL
);
-- and the COLUMNS below
CREATE INDEX IF NOT EXISTS jobs_live ON jobs(state, id) WHERE state IN ('queued', 'running');
-- queries on live jobs repeat this IN term (LIVE below) so that SQLite uses the index: their cost
-- then follows the jobs queued and running, not the jobs the spool ever held
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs(batch);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

# columns added to SCHEMA's jobs since its first version (a spool of an earlier version gets them on opening):
# the checkpoint signal (a name, "" for none) and how many seconds before the walltime it is sent
COLUMNS = {"ckpt_signal": "TEXT NOT NULL DEFAULT ''", "ckpt_grace": "INTEGER NOT NULL DEFAULT 0"}
KILL_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
LIVE = "state IN ('queued', 'running')"


def _marks(n: int) -> str:
    return ",".join("?" * n)


def out_path(spool_dir: Path, job_id: int, stream: str) -> Path:
    """Where a local job's stdout or stderr is kept, in its cluster's spool."""
    return spool_dir / "out" / f"{job_id}.{'out' if stream == 'stdout' else 'err'}"


class Spool:
    """A local cluster's queue: every SQL statement of the local RM is here."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        for folder in (self.dir.parent, self.dir, self.dir / "out"):  # clusters/, its spool, the outputs
            private_dir(folder)
        os.close(open_private(self.dir / "rm.db", os.O_RDWR | os.O_CREAT))  # sqlite gives its WAL the same mode
        # the cycle calls an adapter on a worker thread of its own (cigri.calls), one call at a time
        self.conn = sqlite3.connect(self.dir / "rm.db", isolation_level=None, timeout=30, check_same_thread=False)
        self.conn.execute("PRAGMA busy_timeout = 30000")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("BEGIN IMMEDIATE")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                self.conn.execute(statement)
        present = {row[1] for row in self.conn.execute("PRAGMA table_info(jobs)")}
        for name, kind in COLUMNS.items():
            if name not in present:
                self.conn.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")
        self.conn.execute("COMMIT")

    lock_path = property(lambda self: self.dir / "daemon.lock")
    fifo_path = property(lambda self: self.dir / "wake")
    pid_path = property(lambda self: self.dir / "daemon.pid")

    def out_path(self, job_id: int, stream: str) -> Path:
        return out_path(self.dir, job_id, stream)

    def close(self) -> None:
        self.conn.close()

    # configuration, read by the daemon at each step so that a change applies at once
    def set_meta(self, values: dict) -> None:
        self.conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [(k, json.dumps(v)) for k, v in values.items()],
        )

    def meta(self) -> dict:
        return {k: json.loads(v) for k, v in self.conn.execute("SELECT key, value FROM meta")}

    # client side
    def submit(self, batch: str, jobs: Sequence[dict], now: float) -> list[int]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            existing = self.find_batch(batch)
            if existing is None:
                # ids are never reused, even once forgotten rows (griddel --purge) freed the highest ones: the
                # last id given is kept in meta
                given = self.conn.execute("SELECT value FROM meta WHERE key = 'last_id'").fetchone()
                highest = self.conn.execute("SELECT coalesce(max(id), 0) FROM jobs").fetchone()[0]
                first = max(highest, json.loads(given[0]) if given else 0) + 1
                self.set_meta({"last_id": first + len(jobs) - 1})
                self.conn.executemany(
                    "INSERT INTO jobs (id, batch, argv, cwd, env, walltime, slots, state, queued_at, ckpt_signal, "
                    "ckpt_grace) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)",
                    [
                        (
                            first + i,
                            batch,
                            json.dumps(j["argv"]),
                            j["cwd"],
                            json.dumps(j["env"]),
                            j["walltime"],
                            j["slots"],
                            now,
                            j.get("signal", ""),
                            j.get("grace", 0),
                        )
                        for i, j in enumerate(jobs)
                    ],
                )
                existing = list(range(first, first + len(jobs)))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return existing

    def find_batch(self, batch: str) -> list[int] | None:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM jobs WHERE batch = ? ORDER BY id", (batch,))]
        return ids or None

    def job_record(self, job_id: int) -> dict | None:
        """The spool's row of a job as field -> value, its argv decoded; not its environment, which may
        hold secrets."""
        cursor = self.conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,))
        row = cursor.fetchone()
        if row is None:
            return None
        record = {column[0]: value for column, value in zip(cursor.description, row, strict=True)}
        record.pop("env", None)
        record["argv"] = json.loads(record["argv"])
        return record

    def rows(self, ids: Sequence[int]) -> list[tuple]:
        out = []
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            out.extend(
                self.conn.execute(
                    "SELECT id, state, exit_code, started_at, ended_at, reason FROM jobs "
                    f"WHERE id IN ({_marks(len(chunk))})",
                    chunk,
                )
            )
        return out

    def cancel(self, ids: Sequence[int], now: float) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(ids), 900):
                chunk = list(ids[start : start + 900])
                self.conn.execute(
                    f"UPDATE jobs SET state = 'cancelled', ended_at = ?, reason = 'cancelled before start' "
                    f"WHERE state IN ('queued', 'held') AND id IN ({_marks(len(chunk))})",
                    [now, *chunk],
                )
                self.conn.execute(
                    f"UPDATE jobs SET cancel = 1 WHERE state = 'running' AND id IN ({_marks(len(chunk))})", chunk
                )
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def forget(self, ids: Sequence[int]) -> None:
        """Delete the rows of ended jobs (griddel --purge); a live one stays until it ends."""
        for start in range(0, len(ids), 900):
            chunk = list(ids[start : start + 900])
            self.conn.execute(f"DELETE FROM jobs WHERE NOT {LIVE} AND id IN ({_marks(len(chunk))})", chunk)

    def hold(self, ids: Sequence[int]) -> None:
        """Queued jobs become held: the daemon does not start them (the others are left as they are)."""
        self._move(ids, "queued", "held")

    def release(self, ids: Sequence[int]) -> None:
        """Held jobs are queued again, in their place (the queue is in id order)."""
        self._move(ids, "held", "queued")

    def _move(self, ids: Sequence[int], old: str, new: str) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(ids), 900):
                chunk = list(ids[start : start + 900])
                self.conn.execute(
                    f"UPDATE jobs SET state = ? WHERE state = ? AND id IN ({_marks(len(chunk))})", [new, old, *chunk]
                )
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def usage(self) -> tuple[int, int]:
        """(slots used by running jobs, jobs queued)."""
        used = self.conn.execute(
            f"SELECT coalesce(sum(slots), 0) FROM jobs WHERE {LIVE} AND state = 'running'"
        ).fetchone()[0]
        queued = self.conn.execute(f"SELECT count(*) FROM jobs WHERE {LIVE} AND state = 'queued'").fetchone()[0]
        return used, queued

    def has_work(self) -> bool:
        # running jobs are work too: a daemon that died left them for a new one to watch
        row = self.conn.execute(f"SELECT 1 FROM jobs WHERE {LIVE} LIMIT 1").fetchone()
        return row is not None

    def data_version(self) -> int:
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def wake(self) -> bool:
        """Poke the daemon; False when none is listening."""
        try:
            fd = os.open(self.fifo_path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.ENOENT):
                return False
            raise
        try:
            os.write(fd, b"x")
        except BlockingIOError:
            pass  # the pipe is full of wake-ups already
        finally:
            os.close(fd)
        return True

    def ensure_daemon(self) -> None:
        """Wake the daemon, or start one when none listens and there is work."""
        if self.wake() or not self.has_work():
            return
        subprocess.run(
            [sys.executable, "-m", "cigri.adapters.local_rm", str(self.dir)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )

    def daemon_pid(self) -> int | None:
        try:
            pid = int(self.pid_path.read_text())
        except (OSError, ValueError):
            return None
        lock = os.open(self.lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return pid  # the lock is held: that daemon is alive
        finally:
            os.close(lock)
        return None

    def stop_daemon(self, timeout: float = 10.0) -> None:
        """Stop the daemon (its running jobs are killed) and wait until it has gone."""
        pid = self.daemon_pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        lock = os.open(self.lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    time.sleep(0.02)
        finally:
            os.close(lock)

    # daemon side
    def live(self) -> list[tuple]:
        return self.conn.execute(
            "SELECT id, argv, cwd, env, walltime, slots, state, cancel, pid, pid_start, started_at, ckpt_signal, "
            f"ckpt_grace FROM jobs WHERE {LIVE} ORDER BY id"
        ).fetchall()

    def queued(self, limit: int) -> list[tuple]:
        return self.conn.execute(
            f"SELECT id, argv, cwd, env, walltime, slots, ckpt_signal, ckpt_grace FROM jobs WHERE {LIVE} "
            "AND state = 'queued' "
            "ORDER BY id LIMIT ?",
            (limit,),
        ).fetchall()

    def cancel_requests(self) -> set[int]:
        rows = self.conn.execute(f"SELECT id FROM jobs WHERE {LIVE} AND state = 'running' AND cancel = 1")
        return {r[0] for r in rows}

    def record(self, started: Sequence[tuple], ended: Sequence[tuple]) -> None:
        """started: (pid, pid_start, started_at, id); ended: (state, exit_code, reason, ended_at, id)."""
        if not started and not ended:
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany(
                "UPDATE jobs SET state = 'running', pid = ?, pid_start = ?, started_at = ? WHERE id = ?", started
            )
            self.conn.executemany(
                "UPDATE jobs SET state = ?, exit_code = ?, reason = ?, ended_at = ?, "
                "started_at = coalesce(started_at, ?) WHERE id = ?",
                [(state, code, reason, at, at, job_id) for state, code, reason, at, job_id in ended],
            )
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise


def _proc_start(pid: int) -> str | None:
    """The start time of a process (guards against a reused pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] == "Z":
        return None
    return fields[19]


@dataclass
class _Running:
    job_id: int
    proc: subprocess.Popen | None  # None for a job adopted from a daemon that died
    pid: int
    slots: int
    deadline: float
    kill_reason: str | None = None
    kill_at: float | None = None
    checkpoint_at: float | None = None  # when its checkpoint signal is due (None: none, or sent)
    checkpoint_signal: int = 0


def _checkpoint(name: str, grace: int, deadline: float) -> tuple[float | None, int]:
    """(when, which signal) a job checkpointing by signal gets it: ``grace`` seconds before its deadline."""
    if not name:
        return None, 0
    return deadline - grace, int(signal.Signals[f"SIG{name}"])


class Daemon:
    def __init__(self, spool: Spool):
        self.spool = spool
        self.running: dict[int, _Running] = {}
        self.stopping = False

    def adopt(self) -> None:
        """Jobs a dead daemon left running: watched until they end, then reported lost (no exit status)."""
        ended = []
        for row in self.spool.live():
            job_id, _a, _c, _e, walltime, slots, state, _cancel, pid, pid_start, started, name, grace = row
            if state != "running":
                continue
            if pid and _proc_start(pid) == pid_start:
                deadline = (started or time.time()) + walltime
                at, number = _checkpoint(name, grace, deadline)
                self.running[job_id] = _Running(job_id, None, pid, slots, deadline, None, None, at, number)
            else:
                ended.append(
                    ("lost", None, "the local resource manager stopped while the job ran", time.time(), job_id)
                )
        self.spool.record([], ended)

    def _start(self, row: tuple, meta: dict, now: float) -> tuple | None:
        job_id, argv, cwd, env, walltime, slots, name, grace = row
        argv = json.loads(argv)
        out = self.spool.out_path(job_id, "stdout")
        err = self.spool.out_path(job_id, "stderr")
        # all of it (the daemon's own environment is not the job's), and the job's id here, as an RM gives it
        environment = {**json.loads(env), "CIGRI_LOCAL_JOB_ID": str(job_id)}
        with open(open_private(out), "wb") as out_file, open(open_private(err), "wb") as err_file:
            try:
                proc = subprocess.Popen(
                    argv,
                    cwd=cwd,
                    env=environment,
                    stdin=subprocess.DEVNULL,
                    stdout=out_file,
                    stderr=err_file,
                    start_new_session=True,
                )
            except OSError as exc:
                code = 126 if isinstance(exc, PermissionError) else 127
                what = exc.filename or argv[0]
                err_file.write(f"cigri: cannot start {argv[0]!r} in {cwd!r}: {exc.strerror}: {what}\n".encode())
                return ("exited", code, f"cannot start: {exc.strerror}", now, job_id)
        at, number = _checkpoint(name, grace, now + walltime)
        self.running[job_id] = _Running(job_id, proc, proc.pid, slots, now + walltime, None, None, at, number)
        return (proc.pid, _proc_start(proc.pid), now, job_id)

    def step(self) -> float:
        """Reap, kill, start; return how long the daemon may sleep before it must look again."""
        now = time.time()
        meta = self.spool.meta()
        total = int(meta.get("slots", os.cpu_count() or 1))
        started, ended = [], []
        cancels = self.spool.cancel_requests() if not self.stopping else set()
        for job_id, run in list(self.running.items()):
            code = run.proc.poll() if run.proc else (None if _proc_start(run.pid) else -1)
            if code is not None:
                del self.running[job_id]
                if run.kill_reason == "cancelled":
                    ended.append(("cancelled", None, "cancelled", now, job_id))
                elif run.kill_reason:
                    ended.append(("killed", None, run.kill_reason, now, job_id))
                elif run.proc is None:
                    ended.append(("lost", None, "the local resource manager stopped while the job ran", now, job_id))
                else:
                    exit_code = code if code >= 0 else 128 - code
                    reason = f"killed by signal {-code}" if code < 0 else ""
                    ended.append(("exited", exit_code, reason, now, job_id))
                continue
            if self.stopping and not run.kill_reason:
                self._kill(run, "the local resource manager was stopped", now)
            elif job_id in cancels and run.kill_reason != "cancelled":
                self._kill(run, "cancelled", now)
            elif now >= run.deadline and not run.kill_reason:
                self._kill(run, "walltime", now)
            elif run.kill_at is not None and now >= run.kill_at:
                self._signal(run, signal.SIGKILL)
                run.kill_at = None
            elif run.checkpoint_at is not None and now >= run.checkpoint_at and not run.kill_reason:
                self._signal(run, run.checkpoint_signal)
                run.checkpoint_at = None
        used = sum(run.slots for run in self.running.values())
        if not self.stopping and used < total:
            for row in self.spool.queued(max(1, total - used)):
                slots = row[5]
                if slots > total:
                    ended.append(("exited", 1, f"needs {slots} slots, the cluster has {total}", now, row[0]))
                    continue
                if used + slots > total:
                    break
                result = self._start(row, meta, now)
                (started if len(result) == 4 else ended).append(result)
                if len(result) == 4:
                    used += slots
        self.spool.record(started, ended)
        waits = [run.deadline - now for run in self.running.values() if not run.kill_reason]
        waits += [run.kill_at - now for run in self.running.values() if run.kill_at is not None]
        waits += [run.checkpoint_at - now for run in self.running.values() if run.checkpoint_at is not None]
        if any(run.proc is None for run in self.running.values()):
            waits.append(1.0)
        return max(0.0, min(waits, default=5.0))

    def _kill(self, run: _Running, reason: str, now: float) -> None:
        run.kill_reason = reason
        run.kill_at = now + KILL_GRACE
        self._signal(run, signal.SIGTERM)

    @staticmethod
    def _signal(run: _Running, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(run.pid, sig)


def _open_fifo(path: Path) -> tuple[int, int]:
    with contextlib.suppress(FileExistsError):
        os.mkfifo(path, 0o600)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # so the reader never sees end-of-file
    return reader, keeper


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _take_lock(path: Path, wait: float) -> int | None:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.01)


def serve(directory: Path) -> None:
    """The daemon's main loop (runs detached)."""
    spool = Spool(directory)
    lock = _take_lock(spool.lock_path, wait=10.0)
    if lock is None:
        return  # another daemon holds the spool
    write_private(spool.pid_path, str(os.getpid()))
    signal_r, signal_w = os.pipe()
    os.set_blocking(signal_r, False)
    os.set_blocking(signal_w, False)
    signal.set_wakeup_fd(signal_w)
    daemon = Daemon(spool)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: setattr(daemon, "stopping", True))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    fifo = _open_fifo(spool.fifo_path)
    daemon.adopt()
    idle_since: float | None = None
    while True:
        timeout = daemon.step()
        if daemon.stopping and not daemon.running:
            break
        if daemon.running or spool.has_work():
            idle_since = None
        else:
            idle_since = idle_since or time.monotonic()
            idle_exit = float(spool.meta().get("idle_exit", 30))
            left = idle_exit - (time.monotonic() - idle_since)
            if left <= 0:
                for fd in fifo:
                    os.close(fd)
                if not spool.has_work():
                    break
                fifo = _open_fifo(spool.fifo_path)  # work came in while closing: carry on
                idle_since = None
                continue
            timeout = min(timeout, left)
        ready, _, _ = select.select([signal_r, fifo[0]], [], [], timeout)
        for fd in ready:
            _drain(fd)
    spool.pid_path.unlink(missing_ok=True)
    os.close(lock)


def main(argv: list[str]) -> None:
    """Start the daemon detached from the caller: fork, new session, fork again."""
    directory = Path(argv[0])
    if os.fork():
        return  # the caller waits for this first child only
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    log = open_private(directory / "daemon.log", os.O_CREAT | os.O_WRONLY | os.O_APPEND)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        serve(directory)
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
