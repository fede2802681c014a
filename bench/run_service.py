#!/usr/bin/env python3
"""``grid serve`` at scale, beside gridsub, and under load (issue 25, item 5 and its Targets), against a real
``grid serve`` subprocess on 127.0.0.1 spoken to with httpx.

    .venv/bin/python bench/run_service.py            # full sizes (about 2 minutes)
    .venv/bin/python bench/run_service.py --quick    # smaller sizes, 10 s of load (about a minute)

1. Reads at scale: ``GET /campaigns`` with 1,000 running campaigns, and ``GET /campaigns/ID/jobs?limit=100`` on
   a 1,000,000-job campaign at offset 0, the middle and the last page (``offset``), and at the same places by
   ``after`` (the last job id of the page before): p50 and p99 of one client asking one request after
   another. Target: p99 <= 50 ms.
2. ``POST /campaigns`` of a 100,000-job campaign (the client reads the param file and sends the JDL as JSON)
   vs ``gridsub`` of the same JDL with that file as its ``param_file``, interleaved, median of the repeats.
   Target: <= 1.3x. Meanwhile a reader asks ``GET /campaigns/ID`` and ``GET /campaigns`` again and again: its
   longest wait against the POST's time (readers must not queue behind the submission).
3. Load: 50 readers and 10 writers for 60 s while ``grid almighty --loop`` runs the campaigns on the embedded
   ``local`` cluster (jobs of ``/bin/true``) on the same state. p50/p99 per route kind, errors, requests
   unanswered, then every accepted campaign must end with the jobs it was sent, and ``grid admin check``
   must find the state consistent. Target: 0 errors, p99 <= 200 ms.

It runs with cigri's virtualenv (it imports httpx, and cigri to build its states); its states, param files and
logs live in a temporary folder removed at the end, after the processes started there are stopped. Writes this
script's section of docs/benchmarks.md (or --output).
"""

from __future__ import annotations

import asyncio
import getpass
import json
import math
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness
from harness import BenchError, Row, Section, fms, fs, fx, log, med, side_by_side

try:
    import httpx
except ImportError:  # pragma: no cover - the script's own message
    sys.exit("run_service.py needs cigri's virtualenv with the service extra: .venv/bin/python bench/run_service.py")

FULL = {"campaigns": 1000, "big": 1_000_000, "post": 100_000, "readers": 50, "writers": 10, "seconds": 60.0}
QUICK = {"campaigns": 200, "big": 100_000, "post": 20_000, "readers": 10, "writers": 2, "seconds": 10.0}
SAMPLES = {"full": 200, "quick": 50}  # requests per measured kind in benchmark 1
TARGETS = {"read_p99": 0.050, "post_ratio": 1.3, "load_p99": 0.200}
READER_THINK = (0.0, 0.4)  # seconds a reader waits between two requests (uniform): 0.2 s on average
WRITER_THINK = (0.0, 2.0)  # and a writer between two campaigns
WRITER_JOBS = 10  # jobs of /bin/true per campaign a writer sends
SECTIONS = ("reads", "post", "load")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (p99 of 200 samples is the 198th)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def spread(values: list[float]) -> str:
    """Many samples in one line: how many, and their p50, p90, p99 and maximum."""
    shown = ", ".join(
        f"{name} {percentile(values, q) * 1000:.1f}" for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
    )
    return f"{len(values):,} requests; {shown}, max {max(values) * 1000:.1f} ms"


def write_params(path: Path, count: int) -> list[str]:
    lines = [f"p{i} {i}" for i in range(count)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines


class Server:
    """A ``grid serve`` (or any long-running grid command) on a state, its output in a log file."""

    def __init__(self, runner: harness.Runner, state: Path, *args: str, name: str = "serve"):
        self.log = state.parent / f"{name}.log"
        self.out = open(self.log, "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [str(runner.bin / "grid"), "--state", str(state), *args],
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=subprocess.STDOUT,
            env=runner.env,
            cwd=runner.workdir,
        )

    def stop(self) -> int | None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.out.close()
        return self.process.returncode


class Api(Server):
    """``grid serve --listen 127.0.0.1:PORT``, answering once :meth:`wait_ready` returns."""

    def __init__(self, runner: harness.Runner, state: Path):
        self.base = f"http://127.0.0.1:{free_port()}"
        super().__init__(runner, state, "serve", "--listen", self.base.removeprefix("http://"))
        self.wait_ready()

    def wait_ready(self, deadline: float = 60.0) -> None:
        end = time.monotonic() + deadline
        while True:
            try:
                with httpx.Client(base_url=self.base, timeout=5) as client:
                    if client.get("/").status_code == 200:
                        return
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > end:
                raise BenchError(f"grid serve did not answer: {self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.base, headers={"X-CIGRI-USER": USER}, timeout=600, **kw)


USER = getpass.getuser()  # the service's own user: the local cluster takes its campaigns


def jdl(name: str, directory: Path, params: list[str]) -> dict:
    return {
        "name": name,
        "exec_file": "/bin/true",
        "exec_directory": str(directory),
        "walltime": "00:10:00",
        "clusters": {"local": {}},
        "params": params,
    }


class ServiceBench(harness.Bench):
    script = "bench/run_service.py"
    heading = "###"

    def __init__(self, args, command_line: str, chosen: list[str]):
        super().__init__(args, "svc-bench-")
        self.quick = args.quick
        self.sizes = dict(QUICK if args.quick else FULL)
        if args.seconds:
            self.sizes["seconds"] = args.seconds
        self.samples = SAMPLES["quick" if args.quick else "full"]
        self.command = command_line
        self.chosen = chosen
        self.r = harness.Runner(harness.find_bin(), self.tmp)
        self.running: list[Server] = []
        self.states: list[Path] = []

    # ---- helpers ----
    def fresh_state(self, name: str, slots: int | None = None) -> Path:
        """A new state with its embedded local cluster (``slots`` job slots when given)."""
        from cigri import clusters
        from cigri.clock import RealClock
        from cigri.store import Store

        state = self.tmp / name / "state.db"
        state.parent.mkdir(parents=True)
        store = Store(state)
        try:
            clusters.ensure_default(store, RealClock())
            if slots is not None:
                clusters.set_options(store, "local", {"slots": slots})
        finally:
            store.close()
        self.states.append(state)
        return state

    def start(self, server: Server) -> Server:
        self.running.append(server)
        return server

    def stop_all(self) -> None:
        while self.running:
            server = self.running.pop()
            code = server.stop()
            if code not in (0, -signal.SIGTERM, None):
                log(f"{server.log.name} exited {code}: {server.log.read_text(errors='replace')[-1000:]}")

    def after_section(self) -> None:
        self.stop_all()

    def timed_reads(self, client: httpx.Client, url: str, count: int) -> list[float]:
        """``count`` GETs of ``url`` one after another (after 5 unmeasured), each checked: their seconds."""
        times = []
        for i in range(count + 5):
            start = time.perf_counter()
            answer = client.get(url)
            elapsed = time.perf_counter() - start
            if answer.status_code != 200:
                raise BenchError(f"GET {url}: {answer.status_code} {answer.text[:300]}")
            if i >= 5:
                times.append(elapsed)
        return times

    def reads_after_a_change(self, client: httpx.Client, cid: int, count: int) -> list[float]:
        """``count`` GETs of /campaigns, each after a rename of campaign ``cid`` (not timed), so that no answer
        kept for an unchanged state serves it: their seconds."""
        times = []
        for i in range(count):
            client.put(f"/campaigns/{cid}", json={"name": f"big-{i % 2}"}).raise_for_status()
            start = time.perf_counter()
            client.get("/campaigns").raise_for_status()
            times.append(time.perf_counter() - start)
        return times

    # ---- 1. reads at scale ----
    def bench_reads(self, sec: Section) -> None:
        from cigri import campaigns as ops
        from cigri import jdl as jdl_mod
        from cigri.clock import RealClock
        from cigri.store import Store

        s = self.sizes
        state = self.fresh_state("reads")
        params = self.tmp / "reads-params.txt"
        write_params(params, s["big"])
        big_jdl = self.tmp / "reads-big.yaml"
        harness.write_jdl(big_jdl, "big", "/bin/true", self.tmp, params)
        proc, big = self.r.gridsub(state, big_jdl)
        log(f"   gridsub of {s['big']:,} jobs: {fs(proc.wall)}")
        store = Store(state)
        try:
            clock = RealClock()
            for i in range(s["campaigns"] - 1):
                data = jdl(f"c{i}", self.tmp, [f"x{j}" for j in range(10)])
                ops.submit(store, jdl_mod.parse(data), clock, user=USER)
        finally:
            store.close()
        api = self.start(Api(self.r, state))
        with api.client() as client:
            listed = client.get("/campaigns").json()
            if listed["total"] != s["campaigns"]:
                raise BenchError(f"GET /campaigns listed {listed['total']} campaigns, not {s['campaigns']}")
            first_ids = [job["id"] for job in client.get(f"/campaigns/{big}/jobs?limit=1").json()["items"]]
            base = first_ids[0] - 1  # the jobs' ids are consecutive: job k (from 0) is base + 1 + k
            total = s["big"]
            places = {"offset 0": 0, f"offset {total // 2:,}": total // 2, f"offset {total - 100:,}": total - 100}
            urls = {f"GET /campaigns ({s['campaigns']:,} campaigns)": "/campaigns"}
            for label, offset in places.items():
                urls[f"GET jobs?limit=100, {label}"] = f"/campaigns/{big}/jobs?limit=100&offset={offset}"
            for label, offset in places.items():
                where = f"after={base + offset}" if offset else ""
                urls[f"GET jobs?limit=100&after (page at {label.removeprefix('offset ')})"] = (
                    f"/campaigns/{big}/jobs?limit=100{'&' + where if where else ''}"
                )
            # the same pages either way
            deep = total - 100
            by_offset = client.get(f"/campaigns/{big}/jobs?limit=100&offset={deep}").json()["items"]
            by_after = client.get(f"/campaigns/{big}/jobs?limit=100&after={base + deep}").json()["items"]
            if [j["id"] for j in by_offset] != [j["id"] for j in by_after] or len(by_after) != 100:
                raise BenchError("the last page by offset and by after differ")
            changed = f"GET /campaigns ({s['campaigns']:,}), one renamed before each (read and encoded anew)"
            taken = {label: [] for label in [*urls, changed]}
            for _ in range(self.samples // 10):  # interleaved: the machine's noise hits every kind alike
                for label, url in urls.items():
                    taken[label] += self.timed_reads(client, url, 10)
                taken[changed] += self.reads_after_a_change(client, big, 10)
        for label, times in taken.items():
            p50, p99 = med(times), percentile(times, 0.99)
            self.record(label, times)
            met = "yes" if p99 <= TARGETS["read_p99"] else f"**NO**: p99 {fms(p99)}"
            sec.rows.append(Row(f"{label}: p50 / p99", f"{fms(p50)} / {fms(p99)}", "-", "-", "p99 <= 50 ms", met))

    # ---- 2. POST vs gridsub ----
    def bench_post(self, sec: Section) -> None:
        n = self.sizes["post"]
        state = self.fresh_state("post")
        params = self.tmp / "post-params.txt"
        write_params(params, n)
        sub_jdl = self.tmp / "post.yaml"
        harness.write_jdl(sub_jdl, "sub", "/bin/true", self.tmp, params)
        api = self.start(Api(self.r, state))
        stalls: list[tuple[float, float, float]] = []  # (POST seconds, reader's longest wait, its p99)

        def gridsub(rep: int) -> float:
            proc, cid = self.r.gridsub(state, sub_jdl)
            self.check_count(api, cid, n)
            return proc.wall

        def post(rep: int) -> float:
            with api.client() as client:
                probe = client.get("/campaigns?all").json()["items"][0]["id"]
                waits: list[float] = []
                reader = ReaderDuring(api, [f"/campaigns/{probe}", "/campaigns"], waits)
                reader.start()
                try:
                    start = time.perf_counter()
                    lines = params.read_text(encoding="utf-8").splitlines()
                    answer = client.post("/campaigns", content=json.dumps(jdl("post", self.tmp, lines)))
                    wall = time.perf_counter() - start
                finally:
                    reader.stop()
                if answer.status_code != 201:
                    raise BenchError(f"POST /campaigns: {answer.status_code} {answer.text[:300]}")
                self.check_count(api, answer.json()["id"], n)
            stalls.append((wall, max(waits), percentile(waits, 0.99)))
            return wall

        self.r.gridsub(state, sub_jdl)  # a warm-up of each: the first campaign of a state costs more
        post(-1)
        stalls.clear()
        taken = side_by_side(
            self.reps,
            {"post": post, "gridsub": gridsub},
            lambda rep, t: f"POST {fs(t['post'][-1])}, gridsub {fs(t['gridsub'][-1])}",
        )
        self.record(f"POST /campaigns of {n:,} jobs", taken["post"])
        self.record(f"gridsub of {n:,} jobs", taken["gridsub"])
        ratio = med(taken["post"]) / med(taken["gridsub"])
        met = "yes" if ratio <= TARGETS["post_ratio"] else f"**NO**: {fx(ratio)}"
        sec.rows.append(
            Row(
                f"POST /campaigns of {n:,} jobs vs gridsub",
                fs(med(taken["post"])),
                fs(med(taken["gridsub"])),
                fx(ratio),
                "<= 1.3x",
                met,
            )
        )
        longest = max(wait for _, wait, _ in stalls)
        post_time = med([wall for wall, _, _ in stalls])
        sec.rows.append(
            Row(
                "a reader during the POST: its longest wait, p99 (vs the POST's time)",
                f"{fms(longest)}, {fms(max(p99 for _, _, p99 in stalls))}",
                fs(post_time),
                fx(longest / post_time),
                "not stalled for the POST",
                "yes" if longest < post_time / 2 else "**NO**: a read waited for the POST",
            )
        )

    def check_count(self, api: Api, cid: int, n: int) -> None:
        with api.client() as client:
            total = client.get(f"/campaigns/{cid}").json()["total_jobs"]
        if total != n:
            raise BenchError(f"campaign {cid} holds {total} jobs, not {n}")

    # ---- 3. load ----
    def bench_load(self, sec: Section) -> None:
        from cigri import campaigns as ops
        from cigri import jdl as jdl_mod
        from cigri.clock import RealClock
        from cigri.store import Store

        s = self.sizes
        state = self.fresh_state("load", slots=max(4, 2 * len(harness.os.sched_getaffinity(0))))
        store = Store(state)
        try:  # a paused campaign whose jobs the readers page through
            data = jdl("pages", self.tmp, [f"q{i}" for i in range(10_000)])
            paged, _ = ops.submit(store, jdl_mod.parse(data), RealClock(), user=USER)
            ops.pause(store, paged, user=USER)
        finally:
            store.close()
        api = self.start(Api(self.r, state))
        self.start(Server(self.r, state, "almighty", "--loop", "--period", "1", name="almighty"))
        load = Load(api.base, paged, s["readers"], s["writers"], s["seconds"], self.tmp)
        asyncio.run(load.run())
        log(f"   {len(load.samples)} requests, {len(load.sent)} campaigns accepted; waiting for them to end")
        unfinished = self.wait_campaigns(api, load.sent, timeout=120 if self.quick else 600)
        self.stop_all()
        check = self.r.grid(state, "admin", "check", check=False)

        kinds = sorted({kind for kind, _, _ in load.samples})
        every = [elapsed for _, elapsed, _ in load.samples]
        errors = [status for _, _, status in load.samples if status != "ok"]
        for kind in kinds:
            times = [elapsed for k, elapsed, _ in load.samples if k == kind]
            failed = sum(1 for k, _, status in load.samples if k == kind and status != "ok")
            p99 = percentile(times, 0.99)
            self.raw.append(f"- load {kind}: {spread(times)}")
            sec.rows.append(
                Row(
                    f"{kind}: p50 / p99 ({len(times):,} requests, {failed} errors)",
                    f"{fms(med(times))} / {fms(p99)}",
                    "-",
                    "-",
                    "p99 <= 200 ms",
                    "yes" if p99 <= TARGETS["load_p99"] else f"**NO**: p99 {fms(p99)}",
                )
            )
        p99 = percentile(every, 0.99)
        sec.rows.append(
            Row(
                f"every request: p50 / p99 ({len(every):,} in {s['seconds']:.0f} s)",
                f"{fms(med(every))} / {fms(p99)}",
                "-",
                "-",
                "p99 <= 200 ms",
                "yes" if p99 <= TARGETS["load_p99"] else f"**NO**: p99 {fms(p99)}",
            )
        )
        shown = ", ".join(sorted(set(errors))[:5])
        sec.rows.append(
            Row(
                "errors (4xx, 5xx, unanswered)",
                str(len(errors)),
                "-",
                "-",
                "0",
                "yes" if not errors else f"**NO**: {len(errors)} ({shown})",
            )
        )
        sec.rows.append(
            Row(
                f"accepted campaigns ({len(load.sent):,}) not ended with the jobs they were sent",
                str(len(unfinished)),
                "-",
                "-",
                "0",
                "yes" if not unfinished else f"**NO**: {', '.join(unfinished[:5])}",
            )
        )
        sec.rows.append(
            Row(
                "grid admin check after the run",
                f"exit {check.rc}",
                "-",
                "-",
                "exit 0",
                "yes" if check.rc == 0 else f"**NO**: {check.out.strip()[:200]}",
            )
        )

    def wait_campaigns(self, api: Api, sent: dict[int, int], timeout: float) -> list[str]:
        """Wait until every accepted campaign ended (or ``timeout``); those that did not end with the jobs
        they were sent, each saying why."""
        end = time.monotonic() + timeout
        with api.client() as client:
            while True:
                views = {c["id"]: c for c in client.get("/campaigns?all").json()["items"]}
                wrong = []
                for cid, count in sorted(sent.items()):
                    view = views.get(cid)
                    if view is None:
                        wrong.append(f"{cid}: missing")
                    elif (view["state"], view["total_jobs"], view["finished_jobs"]) != ("terminated", count, count):
                        wrong.append(f"{cid}: {view['state']}, {view['finished_jobs']}/{view['total_jobs']} of {count}")
                if not wrong or time.monotonic() > end:
                    return wrong
                time.sleep(1)

    # ---- the end ----
    def cleanup(self) -> None:
        self.stop_all()
        from cigri.adapters.local_rm import Spool

        for state in self.states:  # the local clusters' daemons
            for spool in (state.parent / "clusters").glob("*"):
                if (spool / "rm.db").exists():
                    try:
                        found = Spool(spool)
                        found.stop_daemon()
                        found.close()
                    except Exception as exc:  # keep cleaning
                        log(f"stopping the daemon of {spool}: {exc}")
        super().cleanup()

    def write(self) -> str:
        s = self.sizes
        intro = [
            "## grid serve: reads at scale, POST beside gridsub, load with the cycle running (`bench/run_service.py`)",
            "",
            "A real `grid serve` (uvicorn, 127.0.0.1) over a state file, spoken to with httpx from this script's "
            "process; latencies are the client's, from sending a request to reading its whole answer. Regenerate "
            "this section with:",
            "",
            "```",
            ".venv/bin/python bench/run_service.py            # full sizes, about 2 minutes",
            ".venv/bin/python bench/run_service.py --quick    # smaller sizes, 10 s of load",
            "```",
            "",
        ]
        run = [
            *harness.run_lines(self.command, quick=self.quick, ram=True),
            f"- Sizes: {s['campaigns']:,} running campaigns and one of {s['big']:,} jobs (reads); a "
            f"{s['post']:,}-job POST, {self.reps} repeats interleaved with gridsub (median); {s['readers']} "
            f"readers (waiting {READER_THINK[0]:g}-{READER_THINK[1]:g} s between requests) and {s['writers']} "
            f"writers ({WRITER_JOBS} jobs a campaign, {WRITER_THINK[0]:g}-{WRITER_THINK[1]:g} s between "
            f"campaigns) for {s['seconds']:.0f} s.",
        ]
        left = f"Processes left behind by the run and killed at cleanup: {len(self.left_behind)}."
        return self.report(intro, run, [left, ""])


class ReaderDuring:
    """A thread asking ``urls`` in turn, one after another, until stopped: the seconds of each answer."""

    def __init__(self, api: Api, urls: list[str], waits: list[float]):
        import threading

        self.api, self.urls, self.waits = api, urls, waits
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.read, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def read(self) -> None:
        with self.api.client() as client:
            i = 0
            while not self.done.is_set():
                start = time.perf_counter()
                client.get(self.urls[i % len(self.urls)]).raise_for_status()
                self.waits.append(time.perf_counter() - start)
                i += 1


class Load:
    """Readers and writers against the API for ``seconds``: every request's (kind, seconds, "ok" or what went
    wrong), and the campaigns accepted with the number of jobs each was sent."""

    def __init__(self, base: str, paged: int, readers: int, writers: int, seconds: float, directory: Path):
        self.base, self.paged, self.readers, self.writers = base, paged, readers, writers
        self.seconds, self.directory = seconds, directory
        self.samples: list[tuple[str, float, str]] = []
        self.sent: dict[int, int] = {}

    async def run(self) -> None:
        self.end = time.monotonic() + self.seconds
        rng = random.Random(1)
        tasks = [self.reader(random.Random(rng.random())) for _ in range(self.readers)]
        tasks += [self.writer(random.Random(rng.random()), i) for i in range(self.writers)]
        await asyncio.gather(*tasks)

    async def ask(self, client: httpx.AsyncClient, kind: str, method: str, url: str, **kw) -> httpx.Response | None:
        start = time.perf_counter()
        try:
            answer = await client.request(method, url, **kw)
        except httpx.HTTPError as exc:
            self.samples.append((kind, time.perf_counter() - start, f"unanswered: {type(exc).__name__}"))
            return None
        status = "ok" if answer.status_code < 400 else f"{answer.status_code}"
        self.samples.append((kind, time.perf_counter() - start, status))
        return answer

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base, headers={"X-CIGRI-USER": USER}, timeout=60)

    async def reader(self, rng: random.Random) -> None:
        async with self.client() as client:
            while time.monotonic() < self.end:
                await asyncio.sleep(rng.uniform(*READER_THINK))
                ids = list(self.sent) or [self.paged]
                cid = rng.choice(ids)
                kind = rng.choice(("list", "campaign", "jobs", "events", "usage"))
                if kind == "list":
                    await self.ask(client, "GET /campaigns", "GET", "/campaigns")
                elif kind == "campaign":
                    await self.ask(client, "GET /campaigns/ID", "GET", f"/campaigns/{cid}")
                elif kind == "jobs":
                    offset = rng.randrange(0, 9_900)
                    await self.ask(
                        client, "GET /campaigns/ID/jobs", "GET", f"/campaigns/{self.paged}/jobs?offset={offset}"
                    )
                elif kind == "events":
                    await self.ask(client, "GET /campaigns/ID/events", "GET", f"/campaigns/{cid}/events")
                else:
                    await self.ask(client, "GET /gridusage", "GET", "/gridusage")

    async def writer(self, rng: random.Random, number: int) -> None:
        async with self.client() as client:
            sent = 0
            while time.monotonic() < self.end:
                await asyncio.sleep(rng.uniform(*WRITER_THINK))
                params = [f"w{number}-{sent}-{j}" for j in range(WRITER_JOBS)]
                answer = await self.ask(
                    client, "POST /campaigns", "POST", "/campaigns", json=jdl(f"w{number}", self.directory, params)
                )
                sent += 1
                if answer is not None and answer.status_code == 201:
                    self.sent[answer.json()["id"]] = WRITER_JOBS


def main() -> None:
    parser = harness.arguments(__doc__, quick="smaller sizes and 10 s of load (a smoke run)", repeats=3)
    parser.add_argument("--seconds", type=float, help="seconds of load (overrides the size)")
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"the benchmarks to run, comma-separated among {','.join(SECTIONS)} (default all)",
    )
    args = parser.parse_args()
    chosen = args.sections.split(",")
    if unknown := [name for name in chosen if name not in SECTIONS]:
        parser.error(f"unknown section(s) {', '.join(unknown)}: choose among {', '.join(SECTIONS)}")
    bench = ServiceBench(args, harness.command("bench/run_service.py", parser, args), chosen)
    s = bench.sizes
    plan = {
        "reads": (
            "reads at scale",
            f"`GET /campaigns` with {s['campaigns']:,} running campaigns (one of {s['big']:,} jobs, the others of "
            f"10), and pages of 100 of the big campaign's jobs by `offset` and by `after`; {bench.samples} requests "
            "each, the kinds interleaved, one client asking one request after another.",
            bench.bench_reads,
        ),
        "post": (
            "POST /campaigns beside gridsub",
            f"`POST /campaigns` of {s['post']:,} jobs (timed from reading the param file to the 201: the client "
            "builds the JSON JDL) vs `gridsub` of a JDL naming the same file as its `param_file` (a subprocess, "
            "interpreter start-up included), on the same state while `grid serve` runs, interleaved. During each "
            "POST a reader asks `GET /campaigns/ID` and `GET /campaigns` one after another.",
            bench.bench_post,
        ),
        "load": (
            "readers and writers with the cycle running",
            f"{s['readers']} readers (`GET /campaigns`, `/campaigns/ID`, a page of a paused 10,000-job "
            f"campaign's jobs at a random offset, `/campaigns/ID/events`, `/gridusage`, chosen at random) and "
            f"{s['writers']} writers (`POST /campaigns` of {WRITER_JOBS} jobs of `/bin/true`), each its own "
            f"connection, for {s['seconds']:.0f} s, while `grid almighty --loop --period 1` runs them on the "
            "local cluster. Then every accepted campaign must end with its jobs, and `grid admin check` pass.",
            bench.bench_load,
        ),
    }
    bench.run([plan[name] for name in SECTIONS if name in chosen])


if __name__ == "__main__":
    main()
