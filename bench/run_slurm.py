#!/usr/bin/env python3
"""Slurm benchmarks of cigri's two Slurm adapters against a real Slurm, each side by side with raw Slurm.

    python bench/run_slurm.py            # full sizes (about ten minutes)
    python bench/run_slurm.py --quick    # smaller sizes, a smoke run

1. Jobs accepted per second: one batch through slurm-ssh's and slurm-rest's ``submit()`` (the adapter
   classes called directly) vs N × ``sbatch --wrap true`` and vs one ``sbatch --array``.
2. End to end: a campaign of ``/bin/true`` from gridsub to ``almighty --until-done`` vs the raw drain of
   ``sbatch --array=1-N --wrap true`` (until squeue lists none of its tasks).
3. The time from a job's end to cigri recording it, with ``almighty --loop --period P`` running.
4. State queries per updator stage: squeue / slurmrestd state requests with few vs many active jobs.

Needs the local Slurm of scripts/slurm-local.sh (/run/slurm/ci.env) and root (jobs are submitted as the
unprivileged test user through runuser, ssh and slurmrestd). The Slurm is shared: this script never
restarts it and only cancels the jobs it submitted itself. Other work may restart or stop slurmctld
(the Slurm tests do): a measure during which slurmctld restarted (its BOOT_TIME changed) or stopped
answering (a cluster event opened) is measured again, and the report says so (named ``cigri.bench-<tag>...``,
``bench-<tag>-...``, or the batches of its own states). Every measure runs real processes, is repeated
(3 times by default) and the median is kept. Results go to this script's section of
docs/benchmarks.md (or --output); the rest of that file is left as it is. Work folders live in a
temporary directory under /tmp (mode 0777, so that the test user can write there), removed at the end.

It runs under cigri's virtualenv (it re-executes itself with .venv/bin/python when needed): measures 1
and 4 call cigri's adapters and cycle in-process.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness
from harness import BenchError, Row, Section, fms, fs, fx, job_counts, log, med

SCRIPT = "bench/run_slurm.py"

FULL = {"batch": 200, "e2e": 200, "latency_jobs": 20, "periods": (1.0, 10.0), "bulk": (10, 200)}
QUICK = {"batch": 50, "e2e": 50, "latency_jobs": 8, "periods": (1.0,), "bulk": (10, 50)}

TARGETS = {
    "accept_rate": 200.0,  # jobs/s accepted through each adapter's submit()
    "e2e_ratio": 1.1,  # a campaign through cigri within 1.1x the raw drain
    "bulk_calls": 1,  # state queries per cluster per updator stage
}

STAGES = ("updator", "spritz", "metasched", "runner", "nikita")  # a whole pass, as cigri.cycle.STAGES
QUIET_WAIT = 30.0  # seconds to wait for the other users' jobs to leave the node before a timed run
DRAIN_TIMEOUT = 900.0
ATTEMPTS = 3  # a measure disturbed by a slurmctld restart or outage is taken again, this many times at most

# The job of measures 3 and 4: $1 name, $2 seconds to sleep, $3 "stamp": write the end time (epoch, ns).
STAMP_JOB = """#!/bin/sh
[ "${2:-0}" = 0 ] || sleep "$2"
if [ "$3" = stamp ]; then date +%s.%N > "$CIGRI_WORKDIR/end.$CIGRI_JOB_ID"; fi
exit 0
"""

UPDATOR_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \d+ cigri\.cycle INFO updator: (\S+): "
    r"(\d+) running, (\d+) terminated, (\d+) failed, (\d+) resubmitted",
    re.M,
)


def ensure_venv() -> None:
    """Re-execute under cigri's virtualenv when cigri (or httpx) cannot be imported here."""
    try:
        import httpx  # noqa: F401

        import cigri  # noqa: F401
    except ImportError:
        py = harness.find_bin() / "python"
        if Path(sys.prefix).resolve() == py.parent.parent.resolve():  # already the virtualenv's python
            raise
        os.execv(py, [str(py), __file__, *sys.argv[1:]])


def rate(n: int, seconds: float) -> str:
    return f"{fms(seconds)} ({n / seconds:,.0f} jobs/s)"


def log_time(text: str) -> float:
    """A logging asctime (local time, milliseconds) as an epoch."""
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def base_id(remote_id: str) -> str:
    return remote_id.split("_")[0]


class Outage(BenchError):
    """slurmctld did not answer during a measure (cigri opened a cluster event)."""


STATE_REQUEST = re.compile(r"/slurm/v[\d.]+/(jobs|job/\d+)$")  # slurmrestd's answers about jobs' states


def state_request(method: str, path: str) -> bool:
    return method == "GET" and bool(STATE_REQUEST.search(path))


# ---- counting wrappers (measure 4) ----------------------------------------------------------------


class CountingRunner:
    """A CommandRunner that records every command it runs (argv[0], bytes of stdout)."""

    def __init__(self, inner):
        self.inner = inner
        self.where = inner.where
        self.calls: list[tuple[str, int]] = []

    def run(self, argv, *, input=None, timeout=None):
        try:
            result = self.inner.run(argv, input=input, timeout=timeout)
        except Exception:  # a command that never answered still counts (ssh failed, timeout)
            self.calls.append((os.path.basename(argv[0]), -1))
            raise
        self.calls.append((os.path.basename(argv[0]), len(result.stdout)))
        return result

    def close(self):
        self.inner.close()


def counting_transport():
    """An httpx transport that records every request (method, path, bytes of the answer)."""
    import httpx

    class CountingTransport(httpx.BaseTransport):
        def __init__(self):
            self.inner = httpx.HTTPTransport()
            self.calls: list[tuple[str, str, int]] = []

        def handle_request(self, request):
            try:
                response = self.inner.handle_request(request)
                response.read()
            except Exception:  # a request that got no answer still counts
                self.calls.append((request.method, request.url.path, -1))
                raise
            self.calls.append((request.method, request.url.path, len(response.content)))
            return response

        def close(self):
            self.inner.close()

    return CountingTransport()


# ---- the benchmark ---------------------------------------------------------------------------------


class SlurmBench(harness.Bench):
    script = SCRIPT
    heading = "###"

    def __init__(self, args, command_line: str):
        self.env = harness.slurm_env()
        super().__init__(args, "cigri-bench-slurm-", shared=True)  # the test user writes scripts, outputs, stamps
        self.quick = args.quick
        self.sizes = QUICK if args.quick else FULL
        self.with_rest = not args.no_rest_e2e
        self.command = command_line
        self.user = self.env["SLURM_TEST_USER"]
        self.partition = self.env["SLURM_PARTITION"]
        self.tag = uuid.uuid4().hex[:6]
        self.bin = harness.find_bin()
        self.r = harness.Runner(self.bin, self.tmp)
        self.token = self.tmp / "token"
        self.token.write_text(f"SLURM_JWT={self.env['SLURM_JWT_USER']}\n")
        self.token.chmod(0o600)
        self.stamp_job = self.tmp / "stamp-job.sh"
        self.stamp_job.write_text(STAMP_JOB)
        self.stamp_job.chmod(0o755)
        self.mine: set[str] = set()  # ids (array or job) submitted by this run
        self.prefixes = [f"cigri.bench-{self.tag}", f"bench-{self.tag}"]  # job names of this run
        self.states: list[Path] = []
        self.loops: list[subprocess.Popen] = []
        self.left_in_queue = 0
        self.contended: list[str] = []
        self.disturbed: list[str] = []

    # ---- helpers ----
    def folder(self, name: str) -> Path:
        path = self.tmp / name
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)
        return path

    def as_user(self, *argv) -> list[str]:
        return ["runuser", "-u", self.user, "--", *map(str, argv)]

    def after_section(self) -> None:
        self.cancel_mine()

    # ---- the queue ----
    def queue(self, *args: str) -> list[list[str]]:
        """squeue rows (fields split on |); an unknown id is no row."""
        proc = self.r.run(["squeue", "-h", *args], check=False)
        if proc.rc != 0 and "Invalid job id" not in proc.err:
            raise BenchError(f"squeue failed: {proc.err.strip()}")
        return [line.split("|") for line in proc.out.splitlines() if line.strip()]

    def is_mine(self, base: str, name: str) -> bool:
        return base in self.mine or any(name.startswith(p) for p in self.prefixes)

    def cancel(self, ids, *, wait: float = 120.0) -> None:
        """scancel these ids (all submitted by this run), then wait until squeue lists none of them."""
        ids = sorted({base_id(i) for i in ids})
        if not ids:
            return
        assert all(i in self.mine for i in ids), "only this run's jobs are cancelled"
        for start in range(0, len(ids), 500):
            self.r.run(["scancel", *ids[start : start + 500]], check=False)
        deadline = time.monotonic() + wait
        while self.queue("-j", ",".join(ids), "-o", "%i"):
            if time.monotonic() > deadline:
                raise BenchError(f"jobs {ids[:5]}... still queued {wait:.0f} s after scancel")
            time.sleep(0.1)

    def cancel_mine(self) -> None:
        """Cancel whatever of this run is still queued (by id or by name)."""
        rows = self.queue("-o", "%F|%j")
        left = sorted({row[0] for row in rows if len(row) == 2 and self.is_mine(row[0], row[1])})
        if left:
            self.mine.update(left)
            log(f"   cancelling {len(left)} leftover job(s) of this run: {left[:10]}")
            with contextlib.suppress(BenchError):
                self.cancel(left)

    def contention(self) -> tuple[int, int]:
        """(CPUs busy, jobs that could start) on the node from other users' jobs."""
        cpus = pending = 0
        for row in self.queue("-o", "%F|%j|%T|%r|%C"):
            if len(row) != 5 or self.is_mine(row[0], row[1]):
                continue
            if row[2] in ("RUNNING", "COMPLETING", "CONFIGURING"):
                cpus += int(row[4] or 1)
            elif row[2] == "PENDING" and row[3] in ("Priority", "Resources", "None"):
                pending += 1
        return cpus, pending

    def wait_quiet(self, what: str) -> None:
        """Let the other users' jobs leave the node first (at most QUIET_WAIT s); note it when they did not."""
        deadline = time.monotonic() + QUIET_WAIT
        cpus, pending = self.contention()
        while (cpus or pending) and time.monotonic() < deadline:
            time.sleep(0.5)
            cpus, pending = self.contention()
        if cpus or pending:
            self.contended.append(f"{what}: {cpus} CPUs busy, {pending} jobs pending")
            log(f"   {what}: other jobs on the node ({cpus} CPUs busy, {pending} pending); measuring anyway")

    # ---- a shared slurmctld ----
    def controller(self) -> str:
        """slurmctld's BOOT_TIME (it changes when slurmctld restarts), or "down"."""
        proc = self.r.run(["scontrol", "show", "config"], check=False)
        match = re.search(r"^BOOT_TIME\s*=\s*(\S+)", proc.out, re.M)
        return match.group(1) if proc.rc == 0 and match else "down"

    def wait_controller(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while "UP" not in self.r.run(["scontrol", "ping"], check=False).out:
            if time.monotonic() > deadline:
                raise BenchError(f"slurmctld does not answer after {timeout:.0f} s")
            time.sleep(1)

    def undisturbed(self, what: str, measure: Callable[[int], object], recover: Callable[[], object] | None = None):
        """``measure(attempt)``, taken again (at most ATTEMPTS times in all) when slurmctld restarted or did
        not answer meanwhile: what other work on this shared Slurm does must not pass for cigri's cost.
        ``recover`` runs before an attempt that follows an outage (e.g. a pass that closes cigri's event)."""
        for attempt in range(ATTEMPTS):
            self.wait_controller()
            before = self.controller()
            try:
                result = measure(attempt)
            except Outage as exc:
                problem = f"slurmctld did not answer ({exc})"
            else:
                after = self.controller()
                if after == before:
                    return result
                problem = f"slurmctld restarted meanwhile (BOOT_TIME {before} -> {after})"
            self.disturbed.append(f"{what}, attempt {attempt + 1}: {problem}; measured again")
            log(f"   {what}: {problem}; measuring again")
            self.wait_controller()
            if recover:
                recover()
        raise BenchError(f"{what}: disturbed {ATTEMPTS} times in a row")

    # ---- cigri states and clusters ----
    def cluster_config(self, adapter: str) -> dict:
        ssh = harness.slurm_ssh(self.env, self.folder("remote"))
        if adapter == "slurm-ssh":
            return ssh
        return {
            **{key: ssh[key] for key in ("host", "port", "identity_file")},
            "url": self.env["SLURMRESTD_URL"],
            "user": self.user,
            "token_file": str(self.token),
            "partition": self.partition,
            "output_dir": str(self.folder("rest-out")),
        }

    def new_state(self, name: str, adapter: str, queue_depth: int | None = None) -> Path:
        """A fresh state whose only cluster is the local Slurm ('slurm'), through ``adapter``."""
        directory = self.tmp / "states" / name
        directory.mkdir(parents=True)
        state = directory / "state.db"
        self.states.append(state)
        options = ["--adapter", adapter, *harness.cluster_options(self.cluster_config(adapter))]
        if queue_depth is not None:
            options += ["--queue-depth", queue_depth]
        self.r.grid(state, "gridclusters", "add", "slurm", *options)
        self.r.grid(state, "gridclusters", "remove", "local")  # after the add: a state without clusters gets it back
        with closing(sqlite3.connect(state, timeout=30)) as conn:
            instance = conn.execute("SELECT value FROM meta WHERE key = 'instance'").fetchone()[0]
            names = [row[0] for row in conn.execute("SELECT name FROM clusters")]
        if names != ["slurm"]:
            raise BenchError(f"the fresh state has the clusters {names}, not only 'slurm'")
        self.prefixes.append(f"cigri.{instance}.")
        return state

    def write_campaign(self, state: Path, name: str, exec_file: str, workdir: Path, params: list[str]) -> Path:
        param_file = state.parent / "params.txt"
        param_file.write_text("".join(f"{p}\n" for p in params), encoding="utf-8")
        jdl = state.parent / "campaign.yaml"
        harness.write_jdl(jdl, name, exec_file, workdir, param_file, "slurm")
        return jdl

    def state_ids(self, state: Path) -> set[str]:
        with closing(sqlite3.connect(state, timeout=30)) as conn:
            rows = conn.execute("SELECT DISTINCT remote_id FROM jobs WHERE remote_id IS NOT NULL").fetchall()
        ids = {base_id(r[0]) for r in rows}
        self.mine.update(ids)
        return ids

    def true_jobs(self, n: int, workdir: Path, *, named: bool = False) -> list:
        """``n`` jobs of /bin/true (given their name when ``named``) in ``workdir``, as the test user."""
        from cigri.model import JobSpec

        return [
            JobSpec(
                job_id=i,
                campaign_id=1,
                name=f"j{i}",
                argv=("/bin/true", f"j{i}") if named else ("/bin/true",),
                directory=str(workdir),
                walltime=600,
                user=self.user,
            )
            for i in range(1, n + 1)
        ]

    def adapter(self, kind: str):
        from cigri.adapters import AdapterContext
        from cigri.adapters.slurm import SlurmSsh
        from cigri.adapters.slurm_rest import SlurmRest
        from cigri.clock import RealClock
        from cigri.model import Cluster

        context = AdapterContext(self.tmp, RealClock())
        cluster = Cluster("slurm", kind, self.cluster_config(kind))
        return SlurmSsh(cluster, context) if kind == "slurm-ssh" else SlurmRest(cluster, context)

    # ---- setup ----
    def setup(self) -> None:
        log(f"temp dir {self.tmp}; tag {self.tag}; sizes {self.sizes}; {self.reps} repeats")
        self.machine_lines = self.machine()
        self.cancel_mine()

    # ---- 1. jobs accepted per second ----
    def bench_accept(self, sec: Section) -> None:
        n = self.sizes["batch"]
        workdir = self.folder("accept")
        specs = self.true_jobs(n, workdir)
        warm = {kind: self.adapter(kind) for kind in ("slurm-ssh", "slurm-rest")}
        warm["slurm-ssh"].home  # noqa: B018  (warm: $HOME known, the ssh master connection up)
        warm["slurm-rest"].home  # noqa: B018
        warm["slurm-rest"].api  # noqa: B018  (warm: the API version probed)
        times: dict[str, list[float]] = {
            k: [] for k in ("slurm-ssh", "slurm-rest", "slurm-ssh fresh", "slurm-rest fresh", "sbatch", "array")
        }
        name = f"bench-{self.tag}-accept"
        sbatch = ["sbatch", "--parsable", "-p", self.partition, "-J", name, "-o", "/dev/null", "--chdir", workdir]
        loop = shlex.join([*map(str, sbatch), "--wrap", "true"])
        try:
            for rep in range(self.reps):
                for kind in ("slurm-ssh", "slurm-rest"):
                    for fresh in (False, True):
                        adapter = self.adapter(kind) if fresh else warm[kind]
                        key = f"cigri.bench-{self.tag}.{rep}.{kind}{'.fresh' if fresh else ''}"
                        start = time.perf_counter()
                        ids = adapter.submit(key, specs)
                        wall = time.perf_counter() - start
                        if fresh:
                            adapter.close()
                        if len(ids) != n:
                            raise BenchError(f"{kind} submit() returned {len(ids)} ids for {n} jobs")
                        self.mine.update(base_id(i) for i in ids)
                        self.cancel(ids)
                        times[f"{kind}{' fresh' if fresh else ''}"].append(wall)
                proc = self.r.run(self.as_user("sh", "-c", f"for i in $(seq {n}); do {loop} || exit 1; done"))
                ids = [line.split(";")[0] for line in proc.out.split()]
                self.mine.update(ids)
                if len(ids) != n:
                    raise BenchError(f"{n} × sbatch gave {len(ids)} ids")
                self.cancel(ids)
                times["sbatch"].append(proc.wall)
                proc = self.r.run(self.as_user(*sbatch, f"--array=1-{n}", "--wrap", "true"))
                self.mine.add(proc.out.strip().split(";")[0])
                self.cancel([proc.out.strip().split(";")[0]])
                times["array"].append(proc.wall)
                log(
                    f"   rep {rep}: ssh {times['slurm-ssh'][-1]:.4f} s, rest {times['slurm-rest'][-1]:.4f} s, "
                    f"{n} × sbatch {times['sbatch'][-1]:.3f} s, array {times['array'][-1]:.4f} s"
                )
        finally:
            for adapter in warm.values():
                adapter.close()
        goal = TARGETS["accept_rate"]
        base = {"sbatch": med(times["sbatch"]), "array": med(times["array"])}
        labels = {"sbatch": f"{n} × `sbatch --wrap true`", "array": f"one `sbatch --array=1-{n} --wrap true`"}
        for kind in ("slurm-ssh", "slurm-rest"):
            t = med(times[kind])
            per_s = n / t
            for b in ("sbatch", "array"):
                sec.rows.append(
                    Row(
                        f"{kind} `submit()` of {n} jobs vs {labels[b]}",
                        rate(n, t),
                        rate(n, base[b]),
                        fx(t / base[b]),
                        f"≥ {goal:g} jobs/s",
                        "yes" if per_s >= goal else f"**NO**: {per_s:.0f} jobs/s, {goal / per_s:.1f}x too slow",
                    )
                )
        for kind in ("slurm-ssh", "slurm-rest"):
            t = med(times[f"{kind} fresh"])
            sec.rows.append(
                Row(
                    f"{kind} `submit()` of {n} jobs by a fresh adapter (reads $HOME"
                    + ("; the API version from the memory" if kind == "slurm-rest" else "")
                    + f" first) vs {labels['sbatch']}",
                    rate(n, t),
                    rate(n, base["sbatch"]),
                    fx(t / base["sbatch"]),
                    "(extra)",
                    "-",
                )
            )
        for key, values in times.items():
            self.record(f"accept: {key}", values)
        sec.notes.append(
            f"Adapters called in-process (`SlurmSsh` / `SlurmRest` with a list of {n} `JobSpec`), timed around "
            "`submit()` until it returned the ids; the main rows use an adapter that already knows $HOME (and, "
            "for REST, the API version), as in a pass after the first. Both adapters submit a batch as one "
            f"array job. Baselines run as {self.user}: one `runuser` running a shell loop of {n} `sbatch "
            "--parsable`, and one `sbatch --array`. Each batch was cancelled (scancel of its ids) and gone "
            "from squeue before the next measure."
        )

    # ---- 2. end to end ----
    def cigri_campaign(self, label: str, adapter: str, n: int) -> tuple[float, float, int, float]:
        """gridsub + almighty --until-done --period 1 of n × /bin/true: (wall, seconds after the last job's
        end per Slurm, batches submitted, seconds from the start to the first batch submitted)."""
        state = self.new_state(label, adapter)
        workdir = self.folder(f"{label}-work")
        jdl = self.write_campaign(state, label, "/bin/true", workdir, [f"j{i}" for i in range(n)])
        start, epoch = time.perf_counter(), time.time()
        try:
            _, cid = self.r.gridsub(state, jdl)
            self.r.grid(state, "almighty", "--until-done", "--period", "1", "--timeout", DRAIN_TIMEOUT)
            wall = time.perf_counter() - start
            ended = time.time()
        finally:
            self.state_ids(state)
        counts = job_counts(state, cid)
        if counts.get("terminated", 0) != n:
            raise BenchError(f"{adapter}: the campaign of {n} jobs ended with {counts}")
        with closing(sqlite3.connect(state, timeout=30)) as conn:
            last_end = conn.execute("SELECT max(ended_at) FROM jobs").fetchone()[0]
        text = (state.parent / "almighty.log").read_text(errors="replace")
        submits = re.findall(r"^(\S+ \S+) \d+ cigri\.cycle INFO runner: \d+ jobs of campaign", text, re.M)
        return wall, ended - last_end, len(submits), log_time(submits[0]) - epoch if submits else float("nan")

    def raw_drain(self, n: int, workdir: Path) -> float:
        name = f"bench-{self.tag}-drain"
        start = time.perf_counter()
        proc = self.r.run(
            self.as_user(
                "sbatch",
                "--parsable",
                f"--array=1-{n}",
                "-p",
                self.partition,
                "-J",
                name,
                "-o",
                f"{workdir}/raw-%A_%a.out",
                "--chdir",
                workdir,
                "--wrap",
                "true",
            )
        )
        array = proc.out.strip().split(";")[0]
        self.mine.add(array)
        return self.drain(array, start)

    def drain(self, array: str, start: float) -> float:
        """Seconds from ``start`` until squeue lists no task of ``array`` (polled every 50 ms)."""
        deadline = time.monotonic() + DRAIN_TIMEOUT
        while self.queue("-j", array, "-o", "%i"):
            if time.monotonic() > deadline:
                raise BenchError(f"the array {array} still runs after {DRAIN_TIMEOUT:.0f} s")
            time.sleep(0.05)
        wall = time.perf_counter() - start
        bad = [row for row in self.queue("-t", "all", "-j", array, "-o", "%T") if row[0] != "COMPLETED"]
        if bad:
            raise BenchError(f"the array {array}: {len(bad)} tasks did not complete")
        return wall

    def adapter_drain(self, n: int, workdir: Path, rep: int) -> float:
        """All n jobs in one batch through slurm-ssh's submit() (cigri's job script), no almighty: drained."""
        specs = self.true_jobs(n, workdir, named=True)
        adapter = self.adapter("slurm-ssh")
        try:
            adapter.home  # noqa: B018  (as in a pass after the first)
            start = time.perf_counter()
            ids = adapter.submit(f"cigri.bench-{self.tag}.drain{rep}", specs)
        finally:
            adapter.close()
        self.mine.add(base_id(ids[0]))
        return self.drain(base_id(ids[0]), start)

    def bench_e2e(self, sec: Section) -> None:
        n = self.sizes["e2e"]
        kinds = ["slurm-ssh"] + (["slurm-rest"] if self.with_rest else [])
        walls: dict[str, list[float]] = {k: [] for k in [*kinds, "raw", "alone"]}
        tails: dict[str, list[float]] = {k: [] for k in kinds}
        batches: dict[str, list[int]] = {k: [] for k in kinds}
        firsts: dict[str, list[float]] = {k: [] for k in kinds}
        held: list[int] = []  # jobs slurmctld holds (all users, ended ones included) before each run
        raw_dir = self.folder("drain")
        for rep in range(self.reps):  # interleaved, so that machine noise hits all alike
            for kind in [*kinds[:1], "raw", "alone", *kinds[1:]]:
                self.wait_quiet(f"end to end, rep {rep}, {kind}")
                held.append(len(self.queue("-t", "all", "-r", "-o", "%i")))
                what = f"end to end, rep {rep}, {kind}"
                if kind == "raw":
                    walls["raw"].append(self.undisturbed(what, lambda _a: self.raw_drain(n, raw_dir)))
                    continue
                if kind == "alone":
                    drain_alone = self.folder("drain-alone")
                    walls["alone"].append(
                        self.undisturbed(what, lambda a, r=rep, d=drain_alone: self.adapter_drain(n, d, r * 10 + a))
                    )
                    continue
                label = f"e2e-{kind}-{rep}"
                wall, tail, nb, first = self.undisturbed(
                    what, lambda a, label=label, kind=kind: self.cigri_campaign(label + (f"-{a}" if a else ""), kind, n)
                )
                firsts[kind].append(first)
                walls[kind].append(wall)
                tails[kind].append(tail)
                batches[kind].append(nb)
            log(f"   rep {rep}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in walls.items()))
        raw = med(walls["raw"])
        goal = TARGETS["e2e_ratio"]
        for kind in kinds:
            t = med(walls[kind])
            ratio = t / raw
            sec.rows.append(
                Row.times(
                    f"{kind}: {n} × `/bin/true`, gridsub → `almighty --until-done --period 1` done vs the raw "
                    f"drain of `sbatch --array=1-{n} --wrap true`",
                    t,
                    raw,
                    f"≤ {goal:g}x",
                    "yes" if ratio <= goal else f"**NO**: {ratio:.2f}x, {t - raw * goal:.1f} s over the target",
                )
            )
            self.record(f"end to end, cigri {kind}", walls[kind])
            sec.notes.append(
                f"{kind}: {int(med(batches[kind]))} batch(es) (array jobs) per run (median); the first batch was "
                f"submitted {med(firsts[kind]):.2f} s after the start (gridsub, almighty's start-up and first pass; "
                f"almighty.log); almighty returned {med(tails[kind]):.1f} s (median) after the last job's end as "
                "Slurm recorded it (whole seconds, so ±1 s)."
            )
        self.record("end to end, raw drain", walls["raw"])
        alone = med(walls["alone"])
        sec.rows.append(
            Row.times(
                f"diagnostic: the {n} jobs in one batch through slurm-ssh's `submit()` (cigri's array job script), "
                "no almighty, drained vs the raw drain",
                alone,
                raw,
            )
        )
        self.record("end to end, slurm-ssh submit() alone, drained", walls["alone"])
        sec.notes.append(
            f"slurmctld held {min(held):,}–{max(held):,} jobs (all users, ended ones kept for MinJobAge; "
            "`squeue -t all -r`) when these runs started. slurm-rest reads them all once per state, in its first "
            "pass (`GET …/jobs`, before it has a memory of the cluster), then only its own arrays "
            "(`GET …/job/<array id>`)."
        )
        sec.notes.append(
            f"cigri: a fresh state whose only cluster is the local Slurm (partition {self.partition}, default queue "
            "depth 100, `--accounting none`), wall time from before gridsub until `grid almighty --until-done` "
            f"returned. Raw: `sbatch --array` as {self.user}, timed from before sbatch until `squeue -j ARRAY` "
            "(polled every 50 ms) lists none of its tasks."
        )

    # ---- 3. time from a job's end to cigri knowing it ----
    def latency_run(self, adapter: str, period: float, attempt: int = 0) -> list[float]:
        n = self.sizes["latency_jobs"]
        label = f"latency-{adapter}-{period:g}" + (f"-{attempt}" if attempt else "")
        state = self.new_state(label, adapter)
        workdir = self.folder(f"{label}-work")
        step = 0.61 if period <= 1 else 1.77  # spread the ends over the pass phase
        params = [f"l{i} {1 + i * step:.2f} stamp" for i in range(n)]
        jdl = self.write_campaign(state, label, str(self.stamp_job), workdir, params)
        _, cid = self.r.gridsub(state, jdl)
        with open(state.parent / "loop.out", "wb") as out:
            loop = subprocess.Popen(
                [self.bin / "grid", "--state", state, "almighty", "--loop", "--period", f"{period:g}"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.r.env,
                cwd=self.tmp,
            )
        self.loops.append(loop)
        try:
            deadline = time.monotonic() + 600
            while job_counts(state, cid).get("terminated", 0) < n:
                if loop.poll() is not None:
                    raise BenchError(f"almighty --loop exited with {loop.returncode}: {self.tail(state)}")
                if time.monotonic() > deadline:
                    raise BenchError(f"latency run: {job_counts(state, cid)} after 600 s")
                time.sleep(0.2)
        finally:
            self.stop_loop(loop)
            self.state_ids(state)
        counts = job_counts(state, cid)
        if counts.get("terminated", 0) != n:
            raise BenchError(f"latency run ended with {counts}")
        ends = []
        for path in workdir.glob("end.*"):
            ends.append(float(path.read_text().strip()))
        if len(ends) != n:
            raise BenchError(f"{len(ends)} end stamps for {n} jobs")
        ends.sort()
        seen = []  # (time cigri recorded, number of jobs it recorded terminated)
        for match in UPDATOR_LINE.finditer((state.parent / "almighty.log").read_text(errors="replace")):
            if match.group(2) == "slurm" and int(match.group(4)):
                seen.append((log_time(match.group(1)), int(match.group(4))))
        if sum(k for _, k in seen) != n:
            raise BenchError(f"almighty.log records {sum(k for _, k in seen)} terminations for {n} jobs")
        # the jobs a pass recorded are the earliest ended ones not yet recorded
        latencies, i = [], 0
        for at, k in sorted(seen):
            for end in ends[i : i + k]:
                latencies.append(at - end)
            i += k
        if min(latencies) < 0:
            raise BenchError(f"a job recorded {-min(latencies):.3f} s before its own end: log parsing is wrong")
        return latencies

    def stop_loop(self, loop: subprocess.Popen) -> None:
        if loop.poll() is None:
            loop.send_signal(signal.SIGINT)
            try:
                loop.wait(15)
            except subprocess.TimeoutExpired:
                loop.kill()
                loop.wait()

    def tail(self, state: Path) -> str:
        path = state.parent / "loop.out"
        return path.read_text(errors="replace")[-1500:] if path.exists() else ""

    def bench_latency(self, sec: Section) -> None:
        from cigri.adapters.slurm import ACTIVITY_EVERY

        n = self.sizes["latency_jobs"]
        runs = [("slurm-ssh", p) for p in self.sizes["periods"]]
        if self.with_rest:
            runs += [("slurm-rest", p) for p in self.sizes["periods"]]
        for adapter, period in runs:
            what = f"latency, {adapter}, period {period:g}"
            self.wait_quiet(what)
            values = self.undisturbed(
                what, lambda a, adapter=adapter, period=period: self.latency_run(adapter, period, a)
            )
            log(f"   {adapter} period {period:g}: median {med(values):.3f} s, max {max(values):.3f} s")
            sec.rows.append(
                Row(
                    f"{adapter}, `almighty --loop --period {period:g}`: a job's end → cigri records it ({n} jobs)",
                    f"median {fs(med(values))}, max {fs(max(values))}",
                    f"{period:g} s (the period)",
                    f"{med(values) / period:.2f} (median / period)",
                    "-",
                    "-",
                )
            )
            self.record(f"latency {adapter} period {period:g}", sorted(values))
        sec.notes.append(
            "Each job sleeps a different time (spread so that the ends fall anywhere in a pass's period), then "
            "writes `date +%s.%N`; the moment cigri recorded it is the time stamp of almighty.log's `updator: "
            "slurm: … N terminated` line, written when the pass commits the new states (the jobs a line counts "
            "are the earliest ended not yet recorded). One run per line, the sample is its jobs. Between passes "
            "a looping almighty asks each Slurm adapter's `activity()`, which probes at most every "
            f"{ACTIVITY_EVERY:g} s after its last read (one `squeue --me`, or one `GET …/job/<array id>` per "
            "array with tasks cigri follows) and changes when a task cigri follows has ended: the loop then runs "
            "a pass at once. The expected latency is about half that interval, plus Slurm's own delay and the "
            "pass, whatever the period."
        )

    # ---- 4. state queries per updator stage ----
    def bulk_state(self, adapter: str, n: int) -> tuple[Path, dict]:
        """A state with n jobs (sleep 600) submitted to Slurm, all active, and the calls of the pass (run
        in-process) that submitted them."""
        state = self.new_state(f"bulk-{adapter}-{n}", adapter, queue_depth=1000)
        workdir = self.folder(f"bulk-{adapter}-{n}-work")
        jdl = self.write_campaign(state, f"bulk{n}", str(self.stamp_job), workdir, [f"b{i} 600" for i in range(n)])
        _, cid = self.r.gridsub(state, jdl)
        first = self.undisturbed(
            f"state queries, {adapter}, {n} jobs, first pass", lambda _a: self.count_calls(state, STAGES)
        )
        for _ in range(10):
            self.state_ids(state)
            counts = job_counts(state, cid)
            if counts.get("submitted", 0) + counts.get("running", 0) == n:
                return state, first
            self.r.grid(state, "almighty")  # the first pass did not place them all (other cigri jobs queued)
            time.sleep(0.5)
        raise BenchError(f"could not get {n} jobs active: {counts}")

    def count_calls(self, state: Path, stages) -> dict:
        from cigri.adapters import AdapterContext
        from cigri.adapters.slurm import SlurmSsh
        from cigri.adapters.slurm_rest import SlurmRest
        from cigri.clock import RealClock
        from cigri.cycle import Cycle
        from cigri.store import Store

        store = Store(state)
        made = []

        def factory(name: str):
            cluster = store.cluster(name)
            context = AdapterContext(store.directory, RealClock())
            transport = None
            if cluster.adapter == "slurm-rest":
                transport = counting_transport()
                adapter = SlurmRest(cluster, context, transport=transport)
            elif cluster.adapter == "slurm-ssh":
                adapter = SlurmSsh(cluster, context)
            else:
                raise BenchError(f"unexpected cluster {name} ({cluster.adapter}) in the state")
            if adapter.runner is not None:
                adapter.runner = CountingRunner(adapter.runner)
            made.append((adapter, transport))
            return adapter

        cycle = Cycle(store, RealClock(), adapters=factory)
        try:
            start = time.perf_counter()
            cycle.run(stages)
            wall = time.perf_counter() - start
            event = store.open_cluster_event("slurm")
        finally:
            cycle.close()
            store.close()
        if event is not None:
            raise Outage(event.message)
        commands = [c for adapter, _ in made if adapter.runner is not None for c in adapter.runner.calls]
        requests = [c for _, transport in made if transport is not None for c in transport.calls]
        return {
            "wall": wall,
            "commands": len(commands),
            "squeue": sum(1 for name, _ in commands if name == "squeue"),
            "squeue_bytes": sum(max(0, size) for name, size in commands if name == "squeue"),
            "requests": len(requests),
            "get_jobs": sum(1 for method, path, _ in requests if state_request(method, path)),
            "listings": sum(1 for method, path, _ in requests if method == "GET" and path.endswith("/jobs")),
            "jobs_bytes": sum(max(0, size) for method, path, size in requests if state_request(method, path)),
            "all": [name + (" (failed)" if size < 0 else "") for name, size in commands]
            + [f"{method} {path}" + (" (failed)" if size < 0 else "") for method, path, size in requests],
        }

    def bench_bulk(self, sec: Section) -> None:
        few, many = self.sizes["bulk"]
        goal = TARGETS["bulk_calls"]
        results: dict[tuple[str, int], dict] = {}
        for adapter in ("slurm-ssh", "slurm-rest"):
            for n in (few, many):
                state, first = self.bulk_state(adapter, n)

                def recover(state=state) -> None:  # a whole pass: cigri's cluster event closes
                    with contextlib.suppress(Outage):
                        self.count_calls(state, STAGES)

                def measure(stages, what, state=state):
                    return self.undisturbed(what, lambda _a: self.count_calls(state, stages), recover)

                try:
                    updator = [
                        measure(["updator"], f"state queries, {adapter}, {n} active, updator {i + 1}")
                        for i in range(self.reps)
                    ]
                    steady = measure(STAGES, f"state queries, {adapter}, {n} active, steady pass")
                finally:
                    self.cancel(self.state_ids(state))
                results[(adapter, n)] = {"updator": updator, "first": first, "steady": steady}
                self.record(f"updator stage wall, {adapter}, {n} active", [u["wall"] for u in updator])
                log(
                    f"   {adapter}, {n} active: updator {updator[0]['all']}; submitting pass {first['all']}; "
                    f"steady pass {steady['all']}; updator {med([u['wall'] for u in updator]):.3f} s"
                )
        for adapter, what, key in (
            ("slurm-ssh", "`squeue` calls", "squeue"),
            ("slurm-rest", "state requests (`GET …/jobs` or `GET …/job/<array id>`)", "get_jobs"),
        ):
            a = [u[key] for u in results[(adapter, many)]["updator"]]
            b = [u[key] for u in results[(adapter, few)]["updator"]]
            ok = set(a) == set(b) == {goal}
            sec.rows.append(
                Row(
                    f"{adapter}: {what} in one `updator` stage, {many} vs {few} active jobs",
                    f"{max(a)}",
                    f"{max(b)}",
                    fx(max(a) / max(b)) if max(b) else "-",
                    f"{goal} in both",
                    "yes" if ok else f"**NO**: {sorted(set(a))} with {many}, {sorted(set(b))} with {few}",
                )
            )

        def calls(result: dict, adapter: str) -> str:
            if adapter == "slurm-ssh":
                return f"{result['commands']} commands, {result['squeue']} squeue"
            return f"{result['requests']} requests, {result['get_jobs']} state requests ({result['listings']} full)"

        for which, label in (
            ("first", "a whole pass that submits them (fresh adapter)"),
            ("steady", "a whole pass with nothing to submit (fresh adapter)"),
        ):
            for adapter in ("slurm-ssh", "slurm-rest"):
                a, b = results[(adapter, many)][which], results[(adapter, few)][which]
                key = "squeue" if adapter == "slurm-ssh" else "get_jobs"
                sec.rows.append(
                    Row(
                        f"{adapter}: {label}, {many} vs {few} jobs",
                        calls(a, adapter),
                        calls(b, adapter),
                        fx(a[key] / b[key]) if b[key] else "-",
                        "(extra)",
                        "-",
                    )
                )
        for adapter, key in (("slurm-ssh", "squeue_bytes"), ("slurm-rest", "jobs_bytes")):
            a = med([u[key] for u in results[(adapter, many)]["updator"]])
            b = med([u[key] for u in results[(adapter, few)]["updator"]])
            ta = med([u["wall"] for u in results[(adapter, many)]["updator"]])
            tb = med([u["wall"] for u in results[(adapter, few)]["updator"]])
            sec.rows.append(
                Row(
                    f"{adapter}: one `updator` stage, {many} vs {few} active: wall time (size of the state answer)",
                    f"{fms(ta)} ({a / 1024:,.0f} KiB)",
                    f"{fms(tb)} ({b / 1024:,.0f} KiB)",
                    fx(ta / tb),
                    "(extra)",
                    "-",
                )
            )
        listed = {
            f"{adapter}, {which} pass": ", ".join(results[(adapter, many)][which]["all"])
            for adapter in ("slurm-ssh", "slurm-rest")
            for which in ("first", "steady")
        }
        sec.notes.append(
            "In-process: `cigri.cycle.Cycle(store, RealClock(), adapters=factory)`, where the factory builds the "
            "real adapter with its command runner wrapped (counting every ssh command, failed ones too) and, for "
            "slurm-rest, an httpx transport counting every request. A state gets a campaign of `sleep 600` jobs "
            "(queue depth 1000); one whole pass submits them all (one batch, one array job); then "
            f"`cycle.run(['updator'])` {self.reps} times and one more whole pass, each with fresh adapters (a "
            "fresh slurm-rest reads the memory the earlier ones left in the state's folder). The jobs were "
            f"cancelled right after. The calls, in order, with {many} jobs: "
            + "; ".join(f"{k}: {v}" for k, v in listed.items())
            + ". slurm-ssh's answer lists every cigri job of the Slurm user (`squeue --me -t all`, so ended ones "
            "for MinJobAge too); slurm-rest reads each array of the jobs it is asked about (`GET …/job/<array "
            "id>`: every task of that array), and the full listing (`GET …/jobs`: every job slurmctld holds, all "
            "users) only while the state has no memory of the cluster yet (its first pass) or for a batch the "
            "memory lacks. A stage during which slurmctld stopped answering (cigri opened a cluster event) or "
            "restarted is measured again."
        )

    # ---- cleanup ----
    def cleanup(self) -> None:
        for loop in self.loops:
            with contextlib.suppress(Exception):
                self.stop_loop(loop)
        try:
            self.cancel_mine()
            rows = self.queue("-o", "%F|%j")
            self.left_in_queue = sum(1 for row in rows if len(row) == 2 and self.is_mine(row[0], row[1]))
        except Exception as exc:  # keep cleaning
            log(f"cleanup: {exc}")
        super().cleanup()

    # ---- report ----
    def machine(self) -> list[str]:
        py = self.r.run([self.r.py, "-c", "import sys, httpx; print(sys.version.split()[0], httpx.__version__)"])
        pyver, httpx_version = py.out.split()
        slurm = self.r.run(["sinfo", "--version"], check=False).out.strip()
        nodes = self.r.run(["sinfo", "-h", "-p", self.partition, "-o", "%D node(s), %c CPUs each"], check=False)
        s = self.sizes
        return [
            *harness.run_lines(self.command, quick=self.quick, software=f"Python {pyver}, httpx {httpx_version}"),
            f"- Slurm: {slurm}, partition {self.partition}: {nodes.out.strip()} (scripts/slurm-local.sh; "
            f"slurmctld, slurmd, slurmrestd and sshd on 127.0.0.1); jobs run as {self.user}",
            f"- Sizes: {s['batch']}-job batch, {s['e2e']}-job campaign, {s['latency_jobs']} jobs per latency run "
            f"(periods {', '.join(f'{p:g} s' for p in s['periods'])}), {' vs '.join(map(str, s['bulk']))} active "
            f"jobs; each measure repeated {self.reps} times, median shown.",
        ]

    def write(self) -> str:
        intro = [
            "## Slurm adapters against a real Slurm",
            "",
            "cigri's two Slurm adapters (`slurm-ssh`, `slurm-rest`) measured against raw Slurm commands on the "
            "single-node Slurm of `scripts/slurm-local.sh`, side by side in the same run. Regenerate this "
            "section with:",
            "",
            "```",
            "python bench/run_slurm.py            # full sizes, about ten minutes",
            "python bench/run_slurm.py --quick    # smaller sizes, smoke run",
            "```",
            "",
            "The ratio is cigri / baseline for times (lower is better). The Slurm is shared with other work: "
            "before each timed end-to-end or latency run the script waits (up to "
            f"{QUIET_WAIT:g} s) for other users' jobs to leave the node, and says so below when they did not.",
            "",
        ]
        summary = []
        if self.contended:
            summary += ["Runs that started while other users' jobs were on the node:", ""]
            summary += [f"- {c}" for c in self.contended] + [""]
        if self.disturbed:
            summary += ["Measures taken again because slurmctld restarted or did not answer meanwhile:", ""]
            summary += [f"- {d}" for d in self.disturbed] + [""]
        summary += [
            f"Jobs of this run left in the Slurm queue after cleanup: {self.left_in_queue}. Processes left behind "
            f"and killed at cleanup: {len(self.left_behind)}.",
            "",
        ]
        run = getattr(self, "machine_lines", ["- (setup failed: no machine information)"])
        return self.report(intro, run, summary)


def main() -> None:
    parser = harness.arguments(__doc__, quick="smaller sizes (a smoke run)", repeats=3)
    parser.add_argument("--no-rest-e2e", action="store_true", help="measures 2 and 3 through slurm-ssh only")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run_slurm.py: run as root (jobs are submitted as the test user through runuser)")
    ensure_venv()
    bench = SlurmBench(args, harness.command(SCRIPT, parser, args))
    s = bench.sizes
    bench.run(
        [
            (
                "jobs accepted per second",
                f"A {s['batch']}-job batch through each adapter's `submit()` (one array job), timed until it "
                f"returns the ids, vs {s['batch']} × `sbatch --wrap true` and vs one raw "
                f"`sbatch --array=1-{s['batch']}`.",
                bench.bench_accept,
            ),
            (
                "a campaign of `/bin/true` from gridsub to done",
                f"`gridsub` then `grid almighty --until-done --period 1` of {s['e2e']} jobs of `/bin/true` on a "
                f"fresh state whose only cluster is the Slurm, vs the raw drain of `sbatch --array=1-{s['e2e']} "
                "--wrap true` (submission until squeue lists none of its tasks). Runs are interleaved.",
                bench.bench_e2e,
            ),
            (
                "from a job's end to cigri knowing it",
                "With `grid almighty --loop --period P` running, the time from a job's own end (it writes "
                "`date +%s.%N` last) to the updator recording it terminated.",
                bench.bench_latency,
            ),
            (
                "state queries per updator stage",
                f"How many bulk state queries one `updator` stage makes per cluster with {s['bulk'][0]} vs "
                f"{s['bulk'][1]} active jobs: `squeue` (slurm-ssh) and state requests, `GET /slurm/…/jobs` or "
                "`GET /slurm/…/job/<array id>` (slurm-rest).",
                bench.bench_bulk,
            ),
        ]
    )


if __name__ == "__main__":
    main()
