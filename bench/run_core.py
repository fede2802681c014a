#!/usr/bin/env python3
"""Core benchmarks of cigri, each measured side by side with a baseline in the same run.

    python bench/run_core.py            # full sizes (several minutes)
    python bench/run_core.py --quick    # smaller sizes, a smoke run (under a minute)

1. gridsub of a big campaign from a param_file vs a bare sqlite3 executemany of the same rows.
2. gridstat (plain, piped) and gridstat -c on that state vs the interpreter's start-up.
3. one almighty pass with many jobs pending vs the same pass with few pending.
4. a campaign of ``true`` from gridsub to done vs GNU parallel and xargs -P.

Plus diagnostics that isolate where the time goes. Every measure runs real processes (cigri's own
scripts from the project's virtualenv), is repeated (3 times by default) and the median is kept.
Results go to docs/benchmarks.md (or --output). The script only reads the project: states, param
files and spools live in a temporary directory that is removed at the end, after every local
resource-manager daemon has been stopped and any process left in that directory killed.

The interpreter running this script needs only the standard library; cigri's commands and the
cigri-side helpers run with the virtualenv's python (.venv/bin/python).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sections import HEADER, code_version, cpu_model, section_lines

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = ROOT / "docs" / "benchmarks.md"

FULL = {"big": 1_000_000, "small": 10_000, "pass_slots": 1000, "e2e": 2000}
QUICK = {"big": 50_000, "small": 5_000, "pass_slots": 200, "e2e": 300}

TARGETS = {
    "gridsub_ratio": 2.0,  # gridsub within 2x of the bare insert
    "gridsub_rss_mb": 400.0,
    "gridstat_over_startup": 0.3,  # seconds beyond the interpreter's start-up
    "pass_ratio": 1.5,  # pass time, many pending / few pending
    "e2e_ratio": 1.0,  # faster than GNU parallel
}

COMMAND_TIMEOUT = 900.0  # seconds; a command that runs longer is killed and the measure fails


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---- running processes ---------------------------------------------------------------------------


class BenchError(RuntimeError):
    pass


@dataclass
class Proc:
    cmd: list[str]
    wall: float  # seconds
    rss_kb: int  # peak resident set size of the child (and of the children it waited for)
    rc: int
    out: str
    err: str


def find_bin() -> Path:
    venv = ROOT / ".venv" / "bin"
    if (venv / "grid").exists():
        return venv
    grid = shutil.which("grid")
    if grid:
        return Path(grid).resolve().parent
    sys.exit("run_core.py: cannot find cigri's `grid` command (.venv/bin/grid or on PATH)")


class Runner:
    def __init__(self, bin_dir: Path, workdir: Path):
        self.bin = bin_dir
        self.py = str(bin_dir / "python")
        self.workdir = workdir  # every child runs here, so a stray process is recognisable by its cwd
        env = {k: v for k, v in os.environ.items() if k != "CIGRI_STATE"}
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env.pop("PYTHONPATH", None)
        self.env = env

    def run(self, cmd: list, *, check: bool = True, timeout: float = COMMAND_TIMEOUT) -> Proc:
        """Run a command to completion; wall time and peak RSS come from wait4 on this one child."""
        cmd = [str(c) for c in cmd]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            start = time.perf_counter()
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=self.env, cwd=self.workdir
            )
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            wall = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            result = Proc(
                cmd,
                wall,
                usage.ru_maxrss,
                proc.returncode,
                out.read().decode(errors="replace"),
                err.read().decode(errors="replace"),
            )
        if check and result.rc != 0:
            raise BenchError(
                f"`{shlex.join(cmd)}` exited with {result.rc}:\n{result.err.strip()[-2000:] or result.out[-2000:]}"
            )
        return result

    # cigri commands
    def grid(self, state: Path, *args, **kw) -> Proc:
        return self.run([self.bin / "grid", "--state", state, *args], **kw)

    def gridsub(self, state: Path, jdl: Path) -> tuple[Proc, int]:
        proc = self.run([self.bin / "gridsub", "--state", state, jdl])
        match = re.search(r"CAMPAIGN_ID=(\d+)", proc.out)
        if not match:
            raise BenchError(f"gridsub printed no CAMPAIGN_ID:\n{proc.out}\n{proc.err}")
        return proc, int(match.group(1))

    def local_slots(self, state: Path) -> int:
        rows = json.loads(self.grid(state, "gridclusters", "--json").out)
        return next(int(r["slots"]) for r in rows if r["name"] == "local")

    def stop_daemon(self, state: Path) -> None:
        """Stop the local cluster's daemon of a state (its running jobs are killed), if there is one."""
        spool = spool_dir(state)
        if spool.exists():
            self.run([self.py, "-c", STOP_DAEMON, spool])


# ---- states and files ----------------------------------------------------------------------------


def spool_dir(state: Path) -> Path:
    return state.parent / "clusters" / "local"


def write_params(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(f"job{i} {i} 0.5\n" for i in range(n))


def write_jdl(path: Path, name: str, param_file: Path, exec_directory: Path) -> None:
    path.write_text(
        f"name: {name}\n"
        "exec_file: /bin/true\n"
        f"exec_directory: {exec_directory}\n"
        'walltime: "00:10:00"\n'
        "clusters:\n"
        "  local: {}\n"
        f"param_file: {param_file}\n",
        encoding="utf-8",
    )


def job_counts(state: Path, campaign_id: int) -> dict[str, int]:
    with closing(sqlite3.connect(state, timeout=30)) as conn:
        return dict(conn.execute("SELECT state, n FROM job_counts WHERE campaign_id = ?", (campaign_id,)))


def nb_jobs(state: Path, campaign_id: int) -> int:
    with closing(sqlite3.connect(state, timeout=30)) as conn:
        return conn.execute("SELECT nb_jobs FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()[0]


def copy_state(template: Path, directory: Path) -> Path:
    directory.mkdir(parents=True)
    for suffix in ("", "-wal"):
        src = Path(str(template) + suffix)
        if src.exists():
            shutil.copyfile(src, directory / (template.name + suffix))
    return directory / template.name


def wait_spool_idle(state: Path, timeout: float = 120.0) -> None:
    """Wait until the local RM has no queued or running job."""
    db = spool_dir(state) / "rm.db"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with closing(sqlite3.connect(db, timeout=30)) as conn:
            n = conn.execute("SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')").fetchone()[0]
        if n == 0:
            return
        time.sleep(0.05)
    raise BenchError(f"the local RM of {state} still has jobs after {timeout:.0f} s")


def scheduled_per_pass(state: Path) -> list[int]:
    """Jobs the metascheduler placed in each pass, from almighty.log (empty if the log says nothing)."""
    path = state.parent / "almighty.log"
    if not path.exists():
        return []
    return [int(m.group(1)) for m in re.finditer(r"metasched: (\d+) jobs", path.read_text(errors="replace"))]


def leftovers(root: Path) -> list[tuple[int, str]]:
    """Processes whose command line or working directory is under ``root`` (ours by construction)."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if str(root) in cmdline or cwd == str(root) or cwd.startswith(str(root) + "/"):
            found.append((int(entry), cmdline.strip()))
    return found


# ---- snippets run by the virtualenv's python ---------------------------------------------------------

STOP_DAEMON = "import sys; from cigri.adapters.local_rm import Spool; Spool(sys.argv[1]).stop_daemon()"

# The baseline of benchmark 1, and the diagnostics' variants: the same rows (campaign_id, name, params,
# state) from the same param file, with the same pragmas cigri uses, in one transaction.
BARE_INSERT = r"""
import sqlite3, sys
db, params, mode = sys.argv[1], sys.argv[2], sys.argv[3]
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("PRAGMA journal_mode = WAL")
conn.execute("PRAGMA synchronous = NORMAL")
if mode == "similar":
    conn.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, campaign_id INTEGER NOT NULL, "
                 "name TEXT NOT NULL, params TEXT NOT NULL, state TEXT NOT NULL)")
else:
    from cigri.store import migrations
    migrations.apply(conn)
    if mode == "cigri-or":
        conn.execute("DROP INDEX jobs_active")
        conn.execute("CREATE INDEX jobs_active ON jobs(cluster, state) "
                     "WHERE state = 'launching' OR state = 'submitted' OR state = 'running'")
def rows():
    with open(params, encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line.strip():
                yield (1, line.split(None, 1)[0], line, "to_launch")
conn.execute("BEGIN IMMEDIATE")
conn.executemany("INSERT INTO jobs (campaign_id, name, params, state) VALUES (?, ?, ?, ?)", rows())
conn.execute("COMMIT")
conn.close()
"""

# The local resource manager alone: n jobs queued in one batch, timed until the last one ended.
RM_ALONE = r"""
import sys, time
from pathlib import Path
from cigri.adapters.local_rm import Spool
directory, n, slots, cwd = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
spool = Spool(directory)
spool.set_meta({"slots": slots, "idle_exit": 30})
jobs = [{"argv": ["/bin/true", f"job{i}", str(i), "0.5"], "cwd": cwd, "env": {}, "walltime": 600, "slots": 1}
        for i in range(n)]
start = time.time()
ids = spool.submit(f"bench-{time.time_ns()}", jobs, start)
spool.ensure_daemon()
deadline = time.monotonic() + 600
while spool.conn.execute("SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')").fetchone()[0]:
    if time.monotonic() > deadline:
        spool.stop_daemon()
        sys.exit("the local RM did not finish")
    time.sleep(0.02)
end, bad, count = spool.conn.execute(
    "SELECT max(ended_at), sum(state != 'exited' OR exit_code != 0), count(*) FROM jobs WHERE id BETWEEN ? AND ?",
    (min(ids), max(ids))).fetchone()
spool.stop_daemon()
if count != n:
    sys.exit(f"the local RM holds {count} of the {n} jobs")
print(end - start, bad)
"""


# A local RM spool holding the history of n finished jobs, as the local cluster keeps every job it ran
# (rows like the ones cigri's local adapter writes: argv and the job's CIGRI_* environment as JSON).
HISTORY_FILL = r"""
import json, sys, time
from pathlib import Path
from cigri.adapters.local_rm import Spool
directory, n = Path(sys.argv[1]), int(sys.argv[2])
spool = Spool(directory)
env = json.dumps({f"CIGRI_VARIABLE_{i}": "x" * 24 for i in range(19)})
now = time.time()
rows = ((i, f"cigri.bench.1.b.{i // 1000}", json.dumps(["/bin/true", f"job{i}", str(i), "0.5"]), "/tmp", env,
         now, now, now) for i in range(1, n + 1))
spool.conn.execute("BEGIN IMMEDIATE")
spool.conn.executemany(
    "INSERT INTO jobs (id, batch, argv, cwd, env, walltime, slots, state, exit_code, queued_at, started_at, ended_at) "
    "VALUES (?, ?, ?, ?, ?, 600, 1, 'exited', 0, ?, ?, ?)", rows)
spool.conn.execute("COMMIT")
spool.close()
"""


def move_spool_db(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        path = src / f"rm.db{suffix}"
        if path.exists():
            os.replace(path, dst / f"rm.db{suffix}")


# ---- results -------------------------------------------------------------------------------------


@dataclass
class Row:
    measure: str
    cigri: str
    baseline: str
    ratio: str
    target: str
    met: str


@dataclass
class Section:
    title: str
    intro: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None


def med(values: list[float]) -> float:
    return statistics.median(values)


def fs(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds < 10 else f"{seconds:.2f} s"


def fmb(kb: float) -> str:
    return f"{kb / 1024:.0f} MB"


def fx(ratio: float) -> str:
    return f"{ratio:.2f}x"


def samples(values: list[float], unit: str = "s") -> str:
    if unit == "MB":
        return ", ".join(f"{v / 1024:.0f}" for v in values) + " MB"
    return ", ".join(f"{v:.3f}" for v in values) + " s"


class Bench:
    def __init__(self, args):
        self.quick = args.quick
        self.sizes = QUICK if args.quick else FULL
        self.reps = args.repeats
        self.output = Path(args.output)
        self.command = (
            "python bench/run_core.py"
            + (" --quick" if args.quick else "")
            + (f" --repeats {args.repeats}" if args.repeats != 3 else "")
            + (f" --output {args.output}" if Path(args.output).resolve() != DEFAULT_OUTPUT else "")
        )
        self.tmp = Path(tempfile.mkdtemp(prefix="cigri-bench-")).resolve()
        self.bin = find_bin()
        self.r = Runner(self.bin, self.tmp)
        self.sections: list[Section] = []
        self.raw: list[str] = []
        self.template: Path | None = None  # the big campaign's state, kept from benchmark 1
        self.template_cid = 1
        self.states: list[Path] = []  # every state created, so that cleanup stops all their daemons
        self.left_behind: list[tuple[int, str]] = []

    # ---- helpers ----
    def fresh_state(self, name: str) -> Path:
        directory = self.tmp / name
        directory.mkdir(parents=True)
        state = directory / "state.db"
        self.states.append(state)
        return state

    def drop(self, state: Path) -> None:
        """Stop the state's daemon, then remove its directory."""
        self.r.stop_daemon(state)
        shutil.rmtree(state.parent, ignore_errors=True)

    def record(self, label: str, values: list[float], unit: str = "s") -> None:
        self.raw.append(f"- {label}: {samples(values, unit)}")

    def section(self, title: str, intro: str, func) -> None:
        section = Section(title, intro)
        self.sections.append(section)
        log(f"== {title}")
        try:
            func(section)
        except Exception as exc:  # a failing measure is reported, the others still run
            section.error = f"{type(exc).__name__}: {exc}"
            log(f"FAILED: {section.error}\n{traceback.format_exc()}")
        for row in section.rows:
            log(f"   {row.measure}: cigri {row.cigri} | baseline {row.baseline} | {row.ratio} | {row.met}")

    # ---- setup ----
    def setup(self) -> None:
        s = self.sizes
        log(f"temp dir {self.tmp}; sizes {s}; {self.reps} repeats")
        self.params_big = self.tmp / "params_big.txt"
        self.params_small = self.tmp / "params_small.txt"
        self.params_e2e = self.tmp / "params_e2e.txt"
        write_params(self.params_big, s["big"])
        write_params(self.params_small, s["small"])
        write_params(self.params_e2e, s["e2e"])
        self.jdl_big = self.tmp / "big.yaml"
        self.jdl_small = self.tmp / "small.yaml"
        self.jdl_e2e = self.tmp / "e2e.yaml"
        write_jdl(self.jdl_big, "bench-big", self.params_big, self.tmp)
        write_jdl(self.jdl_small, "bench-small", self.params_small, self.tmp)
        write_jdl(self.jdl_e2e, "bench-e2e", self.params_e2e, self.tmp)
        self.machine_lines = self.machine()

    # ---- 1. gridsub ----
    def bench_gridsub(self, sec: Section) -> None:
        n = self.sizes["big"]
        walls, rss, base_walls, base_rss = [], [], [], []
        previous = None
        for rep in range(self.reps):
            state = self.fresh_state(f"sub{rep}")
            proc, cid = self.r.gridsub(state, self.jdl_big)
            if nb_jobs(state, cid) != n:
                raise BenchError(f"gridsub recorded {nb_jobs(state, cid)} jobs, expected {n}")
            walls.append(proc.wall)
            rss.append(proc.rss_kb)
            if previous is not None:
                self.drop(previous)
            previous, self.template, self.template_cid = state, state, cid
            db = self.tmp / f"bare{rep}.db"
            base = self.r.run([self.r.py, "-c", BARE_INSERT, db, self.params_big, "similar"])
            base_walls.append(base.wall)
            base_rss.append(base.rss_kb)
            for suffix in ("", "-wal", "-shm"):
                Path(str(db) + suffix).unlink(missing_ok=True)
            log(f"   rep {rep}: gridsub {proc.wall:.2f} s {proc.rss_kb // 1024} MB; bare {base.wall:.2f} s")
        t, b = med(walls), med(base_walls)
        ratio = t / b
        goal = TARGETS["gridsub_ratio"]
        sec.rows.append(
            Row(
                f"gridsub, {n:,} jobs: wall time",
                fs(t),
                fs(b),
                fx(ratio),
                f"≤ {goal:g}x",
                "yes" if ratio <= goal else f"**NO**: {ratio / goal:.1f}x over the target",
            )
        )
        m, bm = med(rss), med(base_rss)
        goal_mb = TARGETS["gridsub_rss_mb"]
        sec.rows.append(
            Row(
                f"gridsub, {n:,} jobs: peak RSS",
                fmb(m),
                fmb(bm),
                fx(m / bm),
                f"< {goal_mb:g} MB",
                "yes" if m / 1024 < goal_mb else f"**NO**: {m / 1024 - goal_mb:.0f} MB over",
            )
        )
        self.record("gridsub wall", walls)
        self.record("bare insert wall", base_walls)
        self.record("gridsub peak RSS", rss, "MB")
        self.record("bare insert peak RSS", base_rss, "MB")
        self.gridsub_wall = t

    # ---- 2. gridstat ----
    def bench_gridstat(self, sec: Section) -> None:
        if self.template is None:
            raise BenchError("no big state (benchmark 1 failed)")
        state, cid = self.template, self.template_cid
        commands = {
            "python": [self.r.py, "-c", "pass"],
            "gridstat": [self.bin / "gridstat", "--state", state],
            "gridstat -c": [self.bin / "gridstat", "--state", state, "-c", cid],
        }
        times: dict[str, list[float]] = {k: [] for k in commands}
        for cmd in commands.values():  # one warm-up run each: page cache and .pyc files
            self.r.run(cmd)
        for _ in range(self.reps):
            for key, cmd in commands.items():
                proc = self.r.run(cmd)
                if key == "gridstat" and f"{self.sizes['big']}" not in proc.out:
                    raise BenchError(f"unexpected gridstat output:\n{proc.out}")
                times[key].append(proc.wall)
        base = med(times["python"])
        goal = TARGETS["gridstat_over_startup"]
        for key, label in (("gridstat", "gridstat (plain, piped)"), ("gridstat -c", f"gridstat -c {cid}")):
            t = med(times[key])
            extra = t - base
            sec.rows.append(
                Row(
                    f"{label}, {self.sizes['big']:,}-job state",
                    fs(t),
                    f"{fs(base)} (`python -c pass`)",
                    fx(t / base),
                    f"≤ start-up + {goal:g} s",
                    f"yes (+{extra:.3f} s)" if extra <= goal else f"**NO**: +{extra:.3f} s, {extra - goal:.3f} s over",
                )
            )
            self.record(label, times[key])
        self.record("python -c pass", times["python"])
        sec.notes.append(f"Baseline interpreter: `{self.r.py}` (the one cigri's scripts run with).")

    # ---- 3. one almighty pass ----
    def bench_pass(self, sec: Section) -> None:
        if self.template is None:
            raise BenchError("no big state (benchmark 1 failed)")
        slots = self.sizes["pass_slots"]
        big, small = self.sizes["big"], self.sizes["small"]
        self.r.grid(self.template, "gridclusters", "set", "local", "--slots", slots, "--queue-depth", 0)
        small_state = self.fresh_state("pass-small-template")
        _, small_cid = self.r.gridsub(small_state, self.jdl_small)
        self.r.grid(small_state, "gridclusters", "set", "local", "--slots", slots, "--queue-depth", 0)
        templates = {"big": (self.template, self.template_cid, big), "small": (small_state, small_cid, small)}
        first = {"big": [], "small": []}
        second = {"big": [], "small": []}
        cancel = {"big": [], "small": []}
        for rep in range(self.reps):
            for size, (template, cid, n) in templates.items():
                state = copy_state(template, self.tmp / f"pass-{size}-{rep}")
                self.states.append(state)
                try:
                    p1 = self.r.grid(state, "almighty")
                    counts = job_counts(state, cid)
                    if counts.get("to_launch", 0) != n - slots:
                        raise BenchError(f"pass 1 on {n} jobs left {counts} (expected {slots} scheduled)")
                    wait_spool_idle(state)
                    p2 = self.r.grid(state, "almighty")
                    counts = job_counts(state, cid)
                    if counts.get("terminated", 0) != slots or counts.get("to_launch", 0) != n - 2 * slots:
                        raise BenchError(f"pass 2 on {n} jobs left {counts}")
                    first[size].append(p1.wall)
                    second[size].append(p2.wall)
                    # cleanup: cancel the campaign, let nikita kill its jobs, stop the daemon
                    cancel[size].append(self.r.run([self.bin / "griddel", "--state", state, cid]).wall)
                    self.r.grid(state, "almighty")
                finally:
                    self.drop(state)
                log(f"   rep {rep} {n:,} pending: pass {p1.wall:.3f} s, steady pass {p2.wall:.3f} s")
        goal = TARGETS["pass_ratio"]
        for label, data, extra in (
            (f"first pass: schedule and submit {slots} jobs", first, ""),
            (f"steady pass: collect {slots} ended, schedule {slots} more", second, " (extra measure)"),
        ):
            t, b = med(data["big"]), med(data["small"])
            ratio = t / b
            sec.rows.append(
                Row(
                    f"{label}; {big:,} vs {small:,} pending",
                    fs(t),
                    fs(b),
                    fx(ratio),
                    f"≤ {goal:g}x{extra}",
                    "yes" if ratio <= goal else f"**NO**: {ratio / goal:.1f}x over the target",
                )
            )
            self.record(f"{label}, {big:,} pending", data["big"])
            self.record(f"{label}, {small:,} pending", data["small"])
        self.cancel_times = {k: med(v) for k, v in cancel.items()}
        self.record(f"griddel of the {big:,}-job campaign", cancel["big"])
        self.record(f"griddel of the {small:,}-job campaign", cancel["small"])
        sec.notes.append(
            f"Local cluster set to `--slots {slots} --queue-depth 0`; exec_file /bin/true. Each repeat runs on a "
            "fresh copy of the state; the baseline column is the same pass on the small campaign. After each "
            "measure the campaign is cancelled (griddel), one more pass lets nikita kill its jobs, and the "
            "daemon is stopped."
        )
        self.small_template, self.small_cid = small_state, small_cid

    # ---- 4. end to end ----
    def e2e_cigri(self, name: str, queue_depth: int | None = None) -> tuple[float, list[int], int]:
        n = self.sizes["e2e"]
        state = self.fresh_state(name)
        try:
            if queue_depth is not None:
                self.r.grid(state, "gridclusters", "set", "local", "--queue-depth", queue_depth)
            slots = self.r.local_slots(state)
            start = time.perf_counter()
            _, cid = self.r.gridsub(state, self.jdl_e2e)
            self.r.grid(state, "almighty", "--until-done")
            wall = time.perf_counter() - start
            counts = job_counts(state, cid)
            if counts.get("terminated", 0) != n:
                raise BenchError(f"campaign of {n} jobs ended with {counts}")
            per_pass = scheduled_per_pass(state)
        finally:
            self.drop(state)
        return wall, per_pass, slots

    def bench_e2e(self, sec: Section) -> None:
        n = self.sizes["e2e"]
        parallel = shutil.which("parallel")
        is_gnu = False
        if parallel:
            version = self.r.run([parallel, "--version"], check=False).out
            is_gnu = "GNU parallel" in version
        if not is_gnu:
            msg = (
                "GNU parallel is missing (`apt-get install -y parallel`): its baseline was not measured."
                if not parallel
                else f"`{parallel}` is not GNU parallel: its baseline was not measured."
            )
            log("   " + msg)
            sec.notes.append("**" + msg + "**")
        cigri, par, xargs, passes = [], [], [], []
        slots = None
        for rep in range(self.reps):  # interleaved, so that machine noise hits all three alike
            wall, per_pass, slots = self.e2e_cigri(f"e2e{rep}")
            cigri.append(wall)
            passes.append(per_pass)
            if is_gnu:
                par.append(self.r.run(["sh", "-c", f"seq {n} | {shlex.quote(parallel)} -j {slots} true"]).wall)
            xargs.append(self.r.run(["sh", "-c", f"seq {n} | xargs -P {slots} -n 1 true"]).wall)
            log(
                f"   rep {rep}: cigri {wall:.2f} s"
                + (f", parallel {par[-1]:.2f} s" if is_gnu else "")
                + f", xargs {xargs[-1]:.2f} s"
            )
        t = med(cigri)
        goal = TARGETS["e2e_ratio"]
        if is_gnu:
            p = med(par)
            sec.rows.append(
                Row(
                    f"{n:,} × `true`, gridsub → done vs `seq {n} | parallel -j {slots} true`",
                    fs(t),
                    fs(p),
                    fx(t / p),
                    "< 1x (faster than parallel)",
                    "yes" if t / p < goal else f"**NO**: {t / p:.2f}x the time of GNU parallel",
                )
            )
            self.record("GNU parallel", par)
        else:
            sec.rows.append(Row(f"{n:,} × `true` vs GNU parallel", fs(t), "not measured", "-", "< 1x", "not measured"))
        x = med(xargs)
        sec.rows.append(
            Row(
                f"{n:,} × `true`, gridsub → done vs `seq {n} | xargs -P {slots} -n 1 true`",
                fs(t),
                fs(x),
                fx(t / x),
                "(none)",
                "-",
            )
        )
        self.record("cigri gridsub + almighty --until-done", cigri)
        self.record("xargs -P", xargs)
        self.e2e_wall = t
        self.e2e_slots = slots
        jobs_per_pass = [max(p) for p in passes if p]
        npasses = [len(p) for p in passes if p]
        if jobs_per_pass:
            self.e2e_passes = (int(med(npasses)), max(jobs_per_pass))
            sec.notes.append(
                f"cigri: local slots = {slots} (nproc); default queue depth. Passes that scheduled jobs: "
                f"{int(med(npasses))} (median), at most {max(jobs_per_pass)} jobs per pass (from almighty.log)."
            )

    # ---- diagnostics ----
    def diagnostics(self, sec: Section) -> None:
        n = self.sizes["big"]
        rows = sec.rows
        # the same bare insert into cigri's own schema, then with jobs_active's predicate as ORs
        times = {"similar": [], "cigri": [], "cigri-or": []}
        for rep in range(self.reps):
            for mode in times:
                db = self.tmp / f"diag-{mode}-{rep}.db"
                times[mode].append(self.r.run([self.r.py, "-c", BARE_INSERT, db, self.params_big, mode]).wall)
                for suffix in ("", "-wal", "-shm"):
                    Path(str(db) + suffix).unlink(missing_ok=True)
        sim, cig, cor = med(times["similar"]), med(times["cigri"]), med(times["cigri-or"])
        rows.append(
            Row(
                f"bare insert of {n:,} rows: cigri's schema vs the similar table",
                fs(cig),
                fs(sim),
                fx(cig / sim),
                "-",
                "-",
            )
        )
        rows.append(
            Row(
                f"bare insert of {n:,} rows into cigri's schema: `jobs_active` as is (`state IN (…)`) vs its "
                "predicate written `state = … OR …`",
                fs(cig),
                fs(cor),
                fx(cig / cor),
                "-",
                "-",
            )
        )
        for mode, values in times.items():
            self.record(f"bare insert, {mode} schema", values)
        # c. cancelling a big campaign (measured during benchmark 3's cleanup)
        if getattr(self, "cancel_times", None):
            c = self.cancel_times
            rows.append(
                Row(
                    f"griddel of a campaign: {n:,} vs {self.sizes['small']:,} waiting jobs",
                    fs(c["big"]),
                    fs(c["small"]),
                    fx(c["big"] / c["small"]),
                    "-",
                    "-",
                )
            )
        # d. the local RM alone vs xargs, and e. the whole run with a queue deep enough for every job
        e2e = self.sizes["e2e"]
        slots = getattr(self, "e2e_slots", None) or len(os.sched_getaffinity(0))
        rm_alone, deep, xargs = [], [], []
        for rep in range(self.reps):
            spool = self.tmp / f"rm-alone-{rep}"
            proc = self.r.run([self.r.py, "-c", RM_ALONE, spool, e2e, slots, self.tmp])
            elapsed, bad = proc.out.split()
            if bad not in ("0", "None"):
                raise BenchError(f"the local RM alone: {bad} jobs did not exit 0")
            rm_alone.append(float(elapsed))
            shutil.rmtree(spool, ignore_errors=True)
            wall, _, _ = self.e2e_cigri(f"e2e-deep{rep}", queue_depth=e2e)
            deep.append(wall)
            xargs.append(self.r.run(["sh", "-c", f"seq {e2e} | xargs -P {slots} -n 1 true"]).wall)
        x = med(xargs)
        rows.append(
            Row(
                f"local RM alone: {e2e:,} × `true` queued at once, {slots} slots, vs xargs -P {slots}",
                fs(med(rm_alone)),
                fs(x),
                fx(med(rm_alone) / x),
                "-",
                "-",
            )
        )
        if getattr(self, "e2e_wall", None):
            rows.append(
                Row(
                    f"gridsub → done, {e2e:,} × `true`: `--queue-depth {e2e}` vs the default queue depth",
                    fs(med(deep)),
                    fs(self.e2e_wall),
                    fx(med(deep) / self.e2e_wall),
                    "-",
                    "-",
                )
            )
        if getattr(self, "e2e_passes", None):
            npass, per = self.e2e_passes
            gap = self.min_gap()
            sec.notes.append(
                f"With the default queue depth the {e2e:,}-job run took {npass} scheduling passes of at most {per} "
                f"jobs each; `grid almighty --until-done` leaves at least {gap:g} s between passes (cigri/loop.py "
                f"MIN_GAP), which caps the feed at about {per / gap:.0f} jobs/s whatever the RM could do."
            )
        self.record("local RM alone", rm_alone)
        self.record(f"gridsub → done with --queue-depth {e2e}", deep)
        self.record("xargs -P (diagnostics run)", xargs)

    def min_gap(self) -> float:
        proc = self.r.run([self.r.py, "-c", "from cigri.loop import MIN_GAP; print(MIN_GAP)"], check=False)
        try:
            return float(proc.out.strip())
        except ValueError:
            return float("nan")

    def history(self, sec: Section) -> None:
        """The local RM with many finished jobs in its spool vs an empty spool."""
        n_hist = self.sizes["big"]
        n_jobs = max(20, self.sizes["e2e"] // 10)
        slots = getattr(self, "e2e_slots", None) or len(os.sched_getaffinity(0))
        hist = self.tmp / "history-spool"
        fill = self.r.run([self.r.py, "-c", HISTORY_FILL, hist, n_hist])
        log(f"   spool with {n_hist:,} finished jobs written in {fill.wall:.1f} s")
        with_hist, empty = [], []
        for rep in range(self.reps):
            proc = self.r.run([self.r.py, "-c", RM_ALONE, hist, n_jobs, slots, self.tmp])
            with_hist.append(float(proc.out.split()[0]))
            spool = self.tmp / f"rm-empty-{rep}"
            proc = self.r.run([self.r.py, "-c", RM_ALONE, spool, n_jobs, slots, self.tmp])
            empty.append(float(proc.out.split()[0]))
            shutil.rmtree(spool, ignore_errors=True)
            log(f"   rep {rep}: {n_jobs} jobs, history {with_hist[-1]:.2f} s, empty {empty[-1]:.2f} s")
        a, b = med(with_hist), med(empty)
        sec.rows.append(
            Row(
                f"local RM alone, {n_jobs} × `true` on {slots} slots: {n_hist:,} finished jobs in the spool vs "
                "an empty spool",
                fs(a),
                fs(b),
                fx(a / b),
                "-",
                "-",
            )
        )
        self.record(f"local RM alone, {n_hist:,}-job history", with_hist)
        self.record("local RM alone, empty spool", empty)
        template = getattr(self, "small_template", None)
        if template is None:
            sec.notes.append("The almighty pass measure needs benchmark 3's small state, which is missing.")
            return
        pass_slots, n_small = self.sizes["pass_slots"], self.sizes["small"]
        empty_spool = self.tmp / "empty-spool"  # both passes find an existing spool: only its size differs
        self.r.run([self.r.py, "-c", HISTORY_FILL, empty_spool, 0])
        spools = {"history": hist, "empty": empty_spool}
        passes = {"history": [], "empty": []}
        for rep in range(self.reps):
            for kind in passes:
                state = copy_state(template, self.tmp / f"hist-pass-{kind}-{rep}")
                self.states.append(state)
                move_spool_db(spools[kind], spool_dir(state))
                try:
                    p1 = self.r.grid(state, "almighty")
                    counts = job_counts(state, self.small_cid)
                    if counts.get("to_launch", 0) != n_small - pass_slots:
                        raise BenchError(f"pass on {n_small} jobs left {counts} (expected {pass_slots} scheduled)")
                    passes[kind].append(p1.wall)
                    self.r.run([self.bin / "griddel", "--state", state, self.small_cid])
                    self.r.grid(state, "almighty")
                    self.r.stop_daemon(state)
                finally:
                    self.r.stop_daemon(state)
                    move_spool_db(spool_dir(state), spools[kind])
                    self.drop(state)
            log(f"   rep {rep}: pass with history {passes['history'][-1]:.3f} s, empty {passes['empty'][-1]:.3f} s")
        a, b = med(passes["history"]), med(passes["empty"])
        sec.rows.append(
            Row(
                f"first almighty pass ({pass_slots} jobs, {n_small:,} pending): {n_hist:,} finished jobs in the "
                "local spool vs an empty spool",
                fs(a),
                fs(b),
                fx(a / b),
                "-",
                "-",
            )
        )
        self.record(f"first pass, {n_hist:,}-job local history", passes["history"])
        self.record("first pass, empty local spool", passes["empty"])

    # ---- cleanup ----
    def cleanup(self) -> None:
        for state in self.states:
            if spool_dir(state).exists():
                try:
                    self.r.stop_daemon(state)
                except Exception as exc:  # keep cleaning
                    log(f"stopping the daemon of {state}: {exc}")
        for spool in self.tmp.glob("rm-alone-*"):
            subprocess.run([self.r.py, "-c", STOP_DAEMON, str(spool)], check=False, env=self.r.env, cwd=self.tmp)
        found = leftovers(self.tmp)
        for pid, _ in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        if found:
            time.sleep(2)
            for pid, _ in leftovers(self.tmp):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.left_behind = found
        if found:
            log(f"killed {len(found)} processes left behind: {found}")
        remaining = leftovers(self.tmp)
        shutil.rmtree(self.tmp, ignore_errors=True)
        if remaining:
            log(f"WARNING: processes still alive after cleanup: {remaining}")

    # ---- report ----
    def machine(self) -> list[str]:
        py = self.r.run([self.r.py, "-c", "import sys, sqlite3; print(sys.version.split()[0], sqlite3.sqlite_version)"])
        pyver, sqlver = py.out.split()
        cpu = cpu_model()
        mem = ""
        try:
            kb = int(Path("/proc/meminfo").read_text().split()[1])
            mem = f", {kb / 1024 / 1024:.0f} GB RAM"
        except (OSError, ValueError, IndexError):
            pass
        parallel = shutil.which("parallel")
        pv = self.r.run([parallel, "--version"], check=False).out.splitlines()[0] if parallel else "not installed"
        code = code_version(ROOT)
        return [
            f"- cigri code: {code}",
            f"- Date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
            f"- Command: `{self.command}`" + (" (quick mode: smaller sizes, a smoke run)" if self.quick else ""),
            f"- Machine: nproc {len(os.sched_getaffinity(0))} ({cpu}{mem}), Linux {platform.release()}",
            f"- Python {pyver} (cigri's virtualenv), SQLite {sqlver}; {pv}",
            f"- Sizes: {self.sizes['big']:,}-job campaign, {self.sizes['small']:,}-job small campaign, "
            f"{self.sizes['pass_slots']} free slots for the pass, {self.sizes['e2e']:,}-job end-to-end run; "
            f"each measure repeated {self.reps} times, median shown.",
        ]

    def write(self) -> str:
        out = [
            "Core costs of cigri measured against bare baselines, side by side in the same run, with real "
            "processes. Regenerate this section with:",
            "",
            "```",
            "python bench/run_core.py            # full sizes, several minutes",
            "python bench/run_core.py --quick    # smaller sizes, smoke run (< 1 min)",
            "```",
            "",
            "What is compared: `gridsub` of a big campaign vs a bare `sqlite3` `executemany` of the same rows; "
            "`gridstat` vs the interpreter's start-up; one `grid almighty` pass with many vs few jobs pending; "
            "a campaign of `true` from `gridsub` to done vs GNU `parallel` and `xargs -P`. Every measure runs "
            "the project's own scripts (`.venv/bin/gridsub`, …) as subprocesses; wall time is taken around the "
            "subprocess and peak RSS from `wait4` on it. Each measure is repeated and the median kept; the "
            "ratio is cigri / baseline (lower is better). The machines are noisy: treat differences under "
            "~10% as noise.",
            "",
            "## Run",
            "",
            *getattr(self, "machine_lines", ["- (setup failed: no machine information)"]),
            "",
        ]
        body, missed = section_lines(self.sections)
        out += body
        out += ["## Summary", ""]
        if missed:
            out += [f"Targets missed ({len(missed)}):", ""] + [f"- {m}" for m in missed] + [""]
        else:
            out += ["Every measured target was met.", ""]
        out += [
            f"Processes left behind by the run and killed at cleanup: {len(self.left_behind)}.",
            "",
            "## Raw samples",
            "",
            *self.raw,
            "",
        ]
        text = "\n".join(out)
        write_section(self.output, "bench/run_core.py", text)
        return text


# The report is shared: each bench script rewrites only its own section, between its marker lines.
COMMON_HEADER = HEADER


def write_section(path: Path, script: str, body: str) -> str:
    """Rewrite ``script``'s section of the shared report ``path`` (between its marker lines) and keep the
    rest: the common header and the other scripts' sections. A report without markers is run_core.py's
    whole output from before they existed: it becomes run_core.py's section, once. Returns the new file."""
    begin, end = f"<!-- {script}: begin -->", f"<!-- {script}: end -->"
    block = f"{begin}\n{body.strip()}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if not text.strip():
        text = COMMON_HEADER
    elif "<!-- bench/" not in text:
        lines = text.strip().splitlines()
        if lines[0].strip() == "# Benchmarks":
            lines = lines[1:]
        old = "\n".join(lines).strip().replace("Regenerate this file with:", "Regenerate this section with:")
        text = f"{COMMON_HEADER}\n<!-- bench/run_core.py: begin -->\n{old}\n<!-- bench/run_core.py: end -->\n"
    start, stop = text.find(begin), text.find(end)
    if 0 <= start < stop:
        text = text[:start] + block + text[stop + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run, under a minute)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per measure; the median is kept (3)")
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT), help="where to write the report")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    bench = Bench(args)
    started = time.perf_counter()
    try:
        bench.setup()
        n, small = bench.sizes["big"], bench.sizes["small"]
        bench.section(
            "gridsub of a big campaign",
            f"`gridsub` of a {n:,}-job campaign from a param_file (lines `job123 123 0.5`) into a fresh state, vs "
            "a bare Python `sqlite3` `executemany` of the same rows (campaign_id, name, params, state) into a "
            "fresh file with a similar table (no secondary index), same WAL / synchronous=NORMAL pragmas, one "
            "transaction, same interpreter.",
            bench.bench_gridsub,
        )
        bench.section(
            "gridstat on the big state",
            f"`gridstat` (plain output, piped) and `gridstat -c ID` on the {n:,}-job state, vs `python -c pass` "
            "with the same interpreter (one warm-up run each first).",
            bench.bench_gridstat,
        )
        bench.section(
            "one almighty pass vs the number of pending jobs",
            f"One `grid almighty` pass (subprocess, timed) that schedules and submits "
            f"{bench.sizes['pass_slots']} jobs (`/bin/true`) with {n:,} jobs pending, vs the same pass with "
            f"{small:,} pending. The target is a pass time independent of the number of pending jobs.",
            bench.bench_pass,
        )
        bench.section(
            "a campaign of `true` from gridsub to done",
            f"`gridsub` then `grid almighty --until-done` of {bench.sizes['e2e']:,} jobs of `/bin/true` on the "
            "local cluster (slots = nproc), vs GNU parallel and xargs -P running the same number of `true` with "
            "as many at a time. Runs are interleaved.",
            bench.bench_e2e,
        )
        bench.section(
            "Diagnostics (where the time goes)",
            "Measures that isolate single costs behind the numbers above; no targets. The insert variants run the "
            "baseline's insert into cigri's own schema (`cigri.store.migrations`), as is and with the partial "
            "index `jobs_active`'s predicate spelt with ORs; griddel times come from benchmark 3's cleanup; "
            "'local RM alone' queues every job straight into the local resource manager "
            "(`cigri.adapters.local_rm.Spool`) and times until the last one ended.",
            bench.diagnostics,
        )
        bench.section(
            "Diagnostics: the local RM's job history",
            f"The local cluster's spool (`clusters/local/rm.db`) keeps a row for every job it ever ran. Here it "
            f"holds {n:,} finished jobs (rows written directly, shaped like the adapter's), as after running "
            "the big campaign; the same work is timed against an empty spool, interleaved.",
            bench.history,
        )
    except KeyboardInterrupt:
        log("interrupted: cleaning up")
        bench.cleanup()
        raise
    finally:
        if bench.tmp.exists():
            bench.cleanup()
    text = bench.write()
    log(f"done in {time.perf_counter() - started:.0f} s; wrote {bench.output}")
    print(text)


if __name__ == "__main__":
    main()
