#!/usr/bin/env python3
"""cigri's oar-rest adapter against the contract OAR of tests/oar, side by side with per-job baselines; with
``--real``, both OAR adapters against the real OAR 2.5.9 of scripts/oar-local.sh.

    python bench/run_oar.py              # both API flavours, 5 repeats (about a minute)
    python bench/run_oar.py --repeats 1  # a smoke run
    python bench/run_oar.py --real       # the real OAR: 200 one-second jobs three ways (about 25 minutes)

``--real`` (its own section of docs/benchmarks.md): a campaign of N one-second jobs (200 by default) from
gridsub to the end of ``almighty --until-done --period 1``, through oar-rest and through oar-ssh, against the
raw drain of the same jobs (``oarsub --array-param-file`` as the OAR user, then oarstat polled every second
until none is left), in the same run; target ≤ 1.10x. Then the cost of one pass's status poll:
``states()`` of the campaign's N jobs through each adapter.

1. Jobs dispatched per second: ``OarRest.submit()`` of a 500-job batch (ONE array submission, what cigri
   does, timed until it returns the 500 ids) vs 500 single-job ``POST jobs`` of the same payload shape
   (the one-job payload ``submit()`` sends for a batch of one), through one keep-alive httpx client.
2. Polling cost: the HTTP requests (the server's request log) and the time of one ``OarRest.states()``
   of every job, with 10 vs 1,000 active jobs (Waiting or Running). Target: one paginated bulk query,
   ceil(jobs / page_size) requests.

The contract server (tests/oar/server.py) runs in a thread of this process on 127.0.0.1, on a fresh state
file for each measure (each repeat, each flavour). Two artefacts of that test server that would swamp
what is measured are removed in this process only (``--as-is`` keeps them): Nagle's algorithm on its
sockets (it writes headers and body apart: every answer waited ~40 ms for a delayed ACK) and the
re-reading of the whole state file for every job of a detailed listing (the resources never change).
Each measure is repeated (5 times by default) and the median kept. Writes this script's section of
docs/benchmarks.md (or --output).
"""

from __future__ import annotations

import contextlib
import json
import math
import platform
import pwd
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

import httpx  # noqa: E402
from harness import Bench, Row, Runner, Section, arguments, command, find_bin, med, run_lines  # noqa: E402

from cigri.adapters import AdapterContext  # noqa: E402
from cigri.adapters.oar import array_command, walltime_request  # noqa: E402
from cigri.adapters.oar_rest import IDS_PER_QUERY, OarRest  # noqa: E402
from cigri.adapters.oar_ssh import OarSsh  # noqa: E402
from cigri.clock import RealClock  # noqa: E402
from cigri.model import Cluster, JobSpec, RemoteState  # noqa: E402
from tests.oar.contract import OarState  # noqa: E402
from tests.oar.server import OarServer, _Handler  # noqa: E402

SCRIPT = "bench/run_oar.py"
LOGIN = "cigritest"
CORES = 64  # the contract cluster: 64 of the 1,000 polled jobs run, the others wait
TARGET_RATE = 200.0  # jobs/s through submit(), as for the Slurm adapters (bench/run_slurm.py)
TARGET_SPEEDUP = 10.0  # one array submission vs one POST per job
ACTIVE = (RemoteState.PENDING, RemoteState.RUNNING)


def fs(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def spec(i: int) -> JobSpec:
    return JobSpec(job_id=i, campaign_id=1, name=f"j{i}", argv=("~/bin/run", f"j{i}", "5"), directory="~", walltime=600)


def one_job_payload(job: JobSpec, name: str) -> dict:
    """What ``OarRest.submit()`` posts for a batch of one job (home directory ``~``: no directory field)."""
    command, _ = array_command([job], "$HOME")
    return {"resource": walltime_request(job), "command": command, "name": name}


class OarBench(Bench):
    script = SCRIPT
    heading = "###"

    def __init__(self, args, command_line: str):
        super().__init__(args, "cigri-bench-oar-")
        self.command = command_line
        self.flavours = args.flavours.split(",")
        self.count = 0
        self.notes: list[str] = []
        self.asked: list[int] = []
        self.page_size = OarRest(Cluster("x", "oar-rest", {}), AdapterContext(self.tmp, RealClock())).page_size

    @contextlib.contextmanager
    def cluster(self, flavour: str, **config) -> Iterator[tuple[OarState, OarServer, OarRest]]:
        """A fresh contract cluster, its API server and an oar-rest adapter on it (client already open)."""
        self.count += 1
        state = OarState(self.tmp / f"state-{self.count}.json", cores=CORES)
        server = OarServer(state.path, flavour=flavour, user=LOGIN)
        if not self.args.as_is:
            resources = server.state.resources()
            server.state.resources = lambda: resources  # constant for the state's life
        server.start()
        settings = {"url": server.url, "api_flavour": flavour, "login": LOGIN, "max_batch": 1000, **config}
        adapter = OarRest(Cluster("oar", "oar-rest", settings), AdapterContext(self.tmp, RealClock()))
        adapter.client  # noqa: B018 (the httpx client is built before any timing)
        try:
            yield state, server, adapter
        finally:
            adapter.close()
            server.stop()

    # ---- 1. dispatch --------------------------------------------------------------------------------
    def dispatch(self, sec: Section) -> None:
        n = self.args.jobs
        specs = [spec(i) for i in range(1, n + 1)]
        times: dict[str, dict[str, list[float]]] = {f: {"array": [], "single": []} for f in self.flavours}
        requests: dict[str, dict[str, int]] = {f: {} for f in self.flavours}
        for rep in range(self.args.repeats):
            for flavour in self.flavours:
                with self.cluster(flavour) as (state, server, adapter):
                    start = time.perf_counter()
                    ids = adapter.submit(f"cigri.bench.1.b.{rep}", specs)
                    times[flavour]["array"].append(time.perf_counter() - start)
                    requests[flavour]["array"] = len(server.requests)
                    if len(ids) != n or len(state.jobs()) != n:
                        raise SystemExit(f"submit() gave {len(ids)} ids for {n} jobs")
                with self.cluster(flavour) as (state, server, adapter):
                    headers = {"X_REMOTE_IDENT": LOGIN, "Accept": "application/json"}
                    payloads = [one_job_payload(job, f"cigri.bench.1.s.{job.job_id}") for job in specs]
                    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
                        start = time.perf_counter()
                        for payload in payloads:
                            answer = client.post("jobs", json=payload)
                            if answer.status_code not in (200, 201) or not str(answer.json().get("id", "")).isdigit():
                                raise SystemExit(f"POST jobs answered {answer.status_code}: {answer.text[:200]}")
                        times[flavour]["single"].append(time.perf_counter() - start)
                    requests[flavour]["single"] = len(server.requests)
                    if len(state.jobs()) != n:
                        raise SystemExit(f"{n} POSTs left {len(state.jobs())} jobs")
                print(
                    f"dispatch {flavour} rep {rep + 1}: array {fs(times[flavour]['array'][-1])}, "
                    f"{n} POSTs {fs(times[flavour]['single'][-1])}",
                    flush=True,
                )
        for flavour in self.flavours:
            array, single = med(times[flavour]["array"]), med(times[flavour]["single"])
            rate, base = n / array, n / single
            met = rate >= TARGET_RATE and rate / base >= TARGET_SPEEDUP
            sec.rows.append(
                Row(
                    f"jobs/s, {n}-job batch, flavour {flavour}",
                    f"{rate:,.0f} jobs/s ({fs(array)}, {requests[flavour]['array']} requests)",
                    f"{base:,.0f} jobs/s ({fs(single)}, {requests[flavour]['single']} requests)",
                    f"{rate / base:.1f}x",
                    f"≥ {TARGET_RATE:g} jobs/s and ≥ {TARGET_SPEEDUP:g}x",
                    "yes" if met else "**NO**",
                )
            )
            for kind in ("array", "single"):
                self.raw.append(
                    f"- dispatch, flavour {flavour}, {kind}: " + ", ".join(fs(t) for t in times[flavour][kind])
                )

    # ---- 2. polling ---------------------------------------------------------------------------------
    def poll(self, flavour: str, jobs: int, page_size: int | None) -> tuple[int, float, list[int]]:
        """(requests of one states() pass, median time, ids asked per request) with ``jobs`` active jobs."""
        config = {"page_size": page_size} if page_size else {}
        with self.cluster(flavour, **config) as (state, server, adapter):
            ids = adapter.submit("cigri.bench.1.p.1", [spec(i) for i in range(1, jobs + 1)])
            state.advance(0)
            counts, seconds = [], []
            for _ in range(self.args.repeats):
                before = len(server.requests)
                start = time.perf_counter()
                got = adapter.states(ids)
                seconds.append(time.perf_counter() - start)
                answered = server.requests[before:]
                counts.append(len(answered))
                if set(got) != set(ids) or any(status.state not in ACTIVE for status in got.values()):
                    raise SystemExit(f"states() of {jobs} active jobs: {len({s.state for s in got.values()})}")
            asked = []
            for _, path in answered:
                query = parse_qs(urlsplit(path).query)
                asked.append(sum(len(v.split(":")) for v in query.get("ids", [])) + len(query.get("job_ids", [])))
            self.raw.append(
                f"- states(), flavour {flavour}, {jobs} jobs, page_size {adapter.page_size}: "
                + ", ".join(fs(t) for t in seconds)
                + f"; requests {counts}; ids per request {asked}"
            )
            if len(set(counts)) != 1:
                self.notes.append(f"states() of {jobs} jobs ({flavour}) made {counts} requests over the repeats.")
            return int(med(counts)), med(seconds), asked

    def polling(self, sec: Section) -> None:
        small, large = self.args.poll
        default = self.page_size
        for flavour in self.flavours:
            for page_size in (None, 100):
                few, few_time, _ = self.poll(flavour, small, page_size)
                many, many_time, asked = self.poll(flavour, large, page_size)
                size = page_size or default
                want_few, want_many = math.ceil(small / size), math.ceil(large / size)
                ok = few <= want_few and many <= want_many
                label = f"page_size {size}" + (" (cigri's default)" if page_size is None else "")
                sec.rows.append(
                    Row(
                        f"states() requests, {large:,} vs {small} active jobs, flavour {flavour}, {label}",
                        f"{many}",
                        f"{few}",
                        f"{many / few:.1f}x",
                        f"≤ {want_many} vs ≤ {want_few} (ceil(jobs / page_size))",
                        "yes" if ok else f"**NO**: {many - want_many} request(s) over",
                    )
                )
                sec.rows.append(
                    Row(
                        f"states() time, {large:,} vs {small} active jobs, flavour {flavour}, {label}",
                        fs(many_time),
                        fs(few_time),
                        f"{many_time / few_time:.1f}x",
                        "(extra measure)",
                    )
                )
                print(
                    f"polling {flavour} {label}: {small} jobs {few} req {fs(few_time)}, "
                    f"{large} jobs {many} req {fs(many_time)}; ids per request {asked}",
                    flush=True,
                )
                if page_size is None:
                    self.asked = asked
        sec.notes += [
            "Why: `OarRest._jobs` reads the login's current jobs in one paginated listing (no ids in the URL: "
            f"ids per request, last flavour: {self.asked}), then asks by id, in queries of at most "
            f"`IDS_PER_QUERY` = {IDS_PER_QUERY} ids, only for the jobs that listing no longer shows (ended since "
            f"the last pass; none here): the requests follow the pages, ceil(jobs / page_size), not the jobs.",
            *self.notes,
        ]

    # ---- report -------------------------------------------------------------------------------------
    def write(self) -> str:
        intro = [
            "## OAR adapters against the contract server (`bench/run_oar.py`)",
            "",
            "cigri's `oar-rest` adapter (class `OarRest`, called directly) against the contract OAR REST API of "
            "`tests/oar` (OAR 2.5's `oarapi` and OAR 3's API), side by side with per-job baselines in the same "
            "run. Regenerate this section with:",
            "",
            "```",
            "python bench/run_oar.py              # both flavours, 5 repeats, about a minute",
            "python bench/run_oar.py --repeats 1  # smoke run",
            "```",
            "",
            "**Caveat:** the contract server is ours (a Python `http.server` on a JSON state file, built from "
            "OAR's documentation), not OAR: its per-request cost has nothing to do with a real OAR's (Perl or "
            "FastAPI over PostgreSQL, behind TLS, over a network). The absolute figures say little about a real "
            "OAR; the request counts, and the ratios between one request and many, are what carry over. Two "
            "artefacts of the test server are removed in the benchmark process (see the script's docstring; "
            "`--as-is` keeps them, which makes every request ~40 ms and the run several minutes).",
            "",
        ]
        run = [
            *run_lines(
                self.command, utc=True, software=f"Python {platform.python_version()}, httpx {httpx.__version__}"
            ),
            f"- Contract cluster: {CORES} cores, server in a thread of the benchmark process on 127.0.0.1, fresh "
            f"state per measure; test-server artefacts "
            + ("kept (`--as-is`)" if self.args.as_is else "removed (Nagle, per-job re-read of the resources)"),
            f"- Flavours {', '.join(self.flavours)}; each measure repeated {self.reps} times, median shown",
            f"- Wall time of this run: {self.wall:.0f} s",
        ]
        return self.report(intro, run)


# ---- the real OAR 2.5.9 (--real) ------------------------------------------------------------------------

REAL_SCRIPT = "bench/run_oar.py --real"  # the key of its own section of docs/benchmarks.md
OAR_ENV = Path("/run/oar-local/ci.env")  # written by scripts/oar-local.sh start
TARGET_RATIO = 1.10  # cigri's campaign / the raw array drain
DRAIN_TIMEOUT = 1800.0


class RealOarBench(Bench):
    """Campaigns through both adapters and the raw array drain, on the real OAR, one after the other."""

    script = REAL_SCRIPT
    heading = "###"

    def __init__(self, args, command_line: str):
        super().__init__(args, "cigri-bench-oar-real-")
        self.reps = args.real_repeats
        if not OAR_ENV.exists():
            raise SystemExit(f"{OAR_ENV} is missing: run scripts/oar-local.sh start")
        self.env = dict(line.split("=", 1) for line in OAR_ENV.read_text().splitlines() if "=" in line)
        self.command = command_line
        self.runner = Runner(find_bin(), self.tmp)
        self.remote: dict[str, list[str]] = {}  # adapter -> the campaign's remote ids
        # the jobs' folder is in the OAR user's home: OAR deletes that user's files in /tmp at each job's end
        self.work = Path(self.env["OAR_HOME"]) / self.tmp.name

    def as_user(self, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["runuser", "-u", self.env["OAR_USER"], "--", *argv],
            capture_output=True,
            text=True,
            cwd=self.work,
            check=True,
        )

    def setup(self) -> None:
        user = pwd.getpwnam(self.env["OAR_USER"])
        self.work.mkdir()
        (self.work / "job.sh").write_text("#!/bin/sh\nsleep 1\n")
        (self.work / "job.sh").chmod(0o755)
        for path in (self.work, self.work / "job.sh"):
            shutil.chown(path, user.pw_uid, user.pw_gid)

    def cleanup(self) -> None:
        super().cleanup()
        shutil.rmtree(self.work, ignore_errors=True)

    def records(self, sql: str) -> dict:
        out = self.as_user("oarstat", "-f", "-J", "--sql", sql).stdout
        return json.loads(out) if out.strip() else {}

    def makespan(self, sql: str) -> float:
        """OAR's own span of the jobs: the first submission to the last end."""
        jobs = self.records(sql).values()
        return max(job["stopTime"] for job in jobs) - min(job["submissionTime"] for job in jobs)

    def raw_drain(self, n: int, rep: int) -> tuple[float, float]:
        """(wall, OAR's span) of ``oarsub --array-param-file`` of n jobs, oarstat polled each second to the end."""
        params = self.work / f"raw-{rep}.params"
        params.write_text("".join(f"j{i}\n" for i in range(n)))
        name = f"bench.raw.{self.tmp.name}.{rep}"
        start = time.perf_counter()
        self.as_user(
            *("oarsub", "-n", name, "-d", str(self.work), "-O", "/dev/null", "-E", "/dev/null"),
            *("-l", "core=1,walltime=0:10:0", "--array-param-file", str(params), str(self.work / "job.sh")),
        )
        left = f"job_name = '{name}' and state not in ('Terminated', 'Error')"
        while self.records(left):
            if time.perf_counter() - start > DRAIN_TIMEOUT:
                raise RuntimeError(f"the raw array did not drain in {DRAIN_TIMEOUT:.0f} s")
            time.sleep(1)
        wall = time.perf_counter() - start
        return wall, self.makespan(f"job_name = '{name}'")

    def campaign(self, adapter: str, n: int, rep: int) -> tuple[float, float]:
        """(wall, OAR's span) of gridsub + almighty --until-done --period 1 of n jobs through ``adapter``."""
        state = self.tmp / f"{adapter}-{rep}" / "state.db"
        env = self.env
        if adapter == "oar-rest":
            options = ["--url", env["OAR_API_URL"], "--login", env["OAR_USER"]]
        else:
            options = ["--host", env["OAR_SSH_HOST"], "--port", env["OAR_SSH_PORT"], "--user", env["OAR_USER"]]
            options += ["--identity-file", env["OAR_SSH_KEY"], "--remote-dir", str(self.work / f".cigri-{rep}")]
        self.runner.grid(state, "gridclusters", "add", "oar", "--adapter", adapter, *options)
        params = self.tmp / f"{adapter}-{rep}.params"
        params.write_text("".join(f"j{i}\n" for i in range(n)))
        jdl = self.tmp / f"{adapter}-{rep}.yaml"
        jdl.write_text(
            f"name: bench\nexec_file: {self.work / 'job.sh'}\nexec_directory: {self.work}\n"
            f'walltime: "00:10:00"\nparam_file: {params}\nclusters:\n  oar: {{}}\n'
        )
        start = time.perf_counter()
        self.runner.gridsub(state, jdl)
        self.runner.grid(state, "almighty", "--until-done", "--period", "1", "--timeout", str(DRAIN_TIMEOUT))
        wall = time.perf_counter() - start
        jobs = json.loads(self.runner.grid(state, "gridstat", "-c", "1", "-f", "--json").out)
        if len(jobs) != n or {job["state"] for job in jobs} != {"terminated"}:
            raise RuntimeError(f"the {adapter} campaign ended with {Counter(job['state'] for job in jobs)}")
        self.remote[adapter] = [job["remote_id"] for job in jobs]
        ids = ",".join(self.remote[adapter])
        return wall, self.makespan(f"job_id in ({ids})")

    def end_to_end(self, sec: Section) -> None:
        n = self.args.real_jobs
        taken: dict[str, list[tuple[float, float]]] = {"raw": [], "oar-rest": [], "oar-ssh": []}
        for rep in range(self.reps):  # interleaved: the machine's noise hits each alike
            taken["raw"].append(self.raw_drain(n, rep))
            for adapter in ("oar-rest", "oar-ssh"):
                taken[adapter].append(self.campaign(adapter, n, rep))
            print(f"rep {rep + 1}: " + ", ".join(f"{k} {v[-1][0]:.0f} s" for k, v in taken.items()), flush=True)
        raw_wall = med([wall for wall, _ in taken["raw"]])
        raw_span = med([span for _, span in taken["raw"]])
        for adapter in ("oar-rest", "oar-ssh"):
            wall = med([w for w, _ in taken[adapter]])
            span = med([s for _, s in taken[adapter]])
            met = wall / raw_wall <= TARGET_RATIO
            sec.rows.append(
                Row(
                    f"{n} one-second jobs through {adapter}: gridsub to the end of almighty --until-done",
                    f"{wall:.0f} s ({n / wall:.2f} jobs/s)",
                    f"{raw_wall:.0f} s ({n / raw_wall:.2f} jobs/s)",
                    f"{wall / raw_wall:.2f}x",
                    f"≤ {TARGET_RATIO:.2f}x",
                    "yes" if met else f"**NO**: {wall / raw_wall:.2f}x",
                )
            )
            sec.rows.append(
                Row(
                    f"{n} one-second jobs through {adapter}: OAR's span (first submission to last end)",
                    f"{span:.0f} s",
                    f"{raw_span:.0f} s",
                    f"{span / raw_span:.2f}x",
                    "(extra measure)",
                )
            )
        for kind, values in taken.items():
            self.raw.append(f"- {kind}: " + ", ".join(f"wall {w:.1f} s, span {s:.0f} s" for w, s in values))

    def polling(self, sec: Section) -> None:
        """states() of the campaign's jobs (all ended) through each adapter, as one pass of the updator."""
        for adapter in ("oar-rest", "oar-ssh"):
            ids = self.remote.get(adapter)
            if not ids:
                raise RuntimeError(f"no {adapter} campaign ran: nothing to poll")
            env = self.env
            if adapter == "oar-rest":
                made = OarRest(
                    Cluster("oar", adapter, {"url": env["OAR_API_URL"], "login": env["OAR_USER"]}),
                    AdapterContext(self.tmp, RealClock()),
                )
            else:
                config = {"host": env["OAR_SSH_HOST"], "port": int(env["OAR_SSH_PORT"]), "user": env["OAR_USER"]}
                made = OarSsh(
                    Cluster("oar", adapter, {**config, "identity_file": env["OAR_SSH_KEY"]}),
                    AdapterContext(self.tmp, RealClock()),
                )
            seconds = []
            try:
                for _ in range(max(self.reps, 3)):
                    start = time.perf_counter()
                    got = made.states(ids)
                    seconds.append(time.perf_counter() - start)
                    if {status.state for status in got.values()} != {RemoteState.EXITED}:
                        raise RuntimeError(f"{adapter}: states() of the ended campaign: {set(got.values())}")
            finally:
                made.close()
            sec.rows.append(
                Row(f"states() of {len(ids)} ended jobs, {adapter}", fs(med(seconds)), "-", "-", "(extra measure)")
            )
            self.raw.append(f"- states(), {adapter}, {len(ids)} jobs: " + ", ".join(fs(t) for t in seconds))

    def write(self) -> str:
        intro = [
            "## OAR adapters against the real OAR 2.5.9 (`bench/run_oar.py --real`)",
            "",
            "Both OAR adapters against the real OAR 2.5.9 of `scripts/oar-local.sh` (Debian 12's packages: "
            "PostgreSQL, 4 cores of node localhost with cgroup cpusets, the `oarapi` REST API behind Apache and "
            "mod_fcgid), as its unprivileged test user, side by side with the raw array drain in the same run. "
            "Regenerate this section with `python bench/run_oar.py --real` (after `scripts/oar-local.sh start`).",
            "",
        ]
        run = [
            *run_lines(self.command, utc=True, software=f"OAR {self.env.get('OAR_VERSION', '?')}"),
            f"- Each measure repeated {self.reps} time(s), median shown; raw, oar-rest, oar-ssh interleaved",
            f"- Wall time of this run: {self.wall:.0f} s",
        ]
        return self.report(intro, run)


def main_real(args, command_line: str) -> None:
    bench = RealOarBench(args, command_line)
    n = args.real_jobs
    bench.run(
        [
            (
                "End to end on the real OAR",
                f"A campaign of {n} one-second jobs (`sleep 1`) from `gridsub` to the end of `grid almighty "
                "--until-done --period 1` (wall time), through oar-rest and through oar-ssh, against the raw drain "
                f"of the same {n} jobs: one `oarsub --array-param-file` as the OAR user, then `oarstat` polled "
                "every second until none is left. OAR's span (its own records: the first submission to the last "
                "end) is shown beside. The ratio is cigri's / the raw drain's (lower is better).",
                bench.end_to_end,
            ),
            (
                "Status poll on the real OAR",
                f"One `states()` of the campaign's {n} jobs (ended) through each adapter: what one updator pass "
                "costs (oar-rest: the login's current jobs, then the ended ones by id; oar-ssh: one `oarstat -f -J` "
                "through ssh).",
                bench.polling,
            ),
        ]
    )


def main() -> None:
    parser = arguments(__doc__, repeats=5)
    parser.add_argument("--jobs", type=int, default=500, help="jobs of the dispatch batch (500)")
    parser.add_argument("--poll", type=int, nargs=2, default=(10, 1000), metavar=("FEW", "MANY"))
    parser.add_argument("--flavours", default="2.5,3", help="API flavours, comma separated (2.5,3)")
    parser.add_argument("--as-is", action="store_true", help="keep the test server's artefacts (slow)")
    parser.add_argument("--real", action="store_true", help="the real OAR of scripts/oar-local.sh (own section)")
    parser.add_argument("--real-jobs", type=int, default=200, help="--real: jobs of each campaign (200)")
    parser.add_argument("--real-repeats", type=int, default=1, help="--real: repeats of each measure (1)")
    args = parser.parse_args()
    if args.real:
        main_real(args, command(SCRIPT, parser, args))
        return
    if not 1 < args.jobs <= 1000 or not 0 < args.poll[0] < args.poll[1] <= 1000:
        parser.error("1 < jobs ≤ 1000 and 0 < FEW < MANY ≤ 1000 (the server's array limit)")
    _Handler.disable_nagle_algorithm = not args.as_is  # this process only: tests/oar is left as it is
    bench = OarBench(args, command(SCRIPT, parser, args))
    n, (small, large) = args.jobs, args.poll
    bench.run(
        [
            (
                "Jobs dispatched per second",
                f"`OarRest.submit()` of a {n}-job batch (ONE array submission: `POST jobs` with a param file, then "
                "the array's listing to map the ids by `array_index`; timed until the ids are returned) vs "
                f"{n} single-job `POST jobs` of the payload `submit()` sends for a one-job batch, through one "
                "keep-alive httpx client (no id mapping: the baseline does less). Fresh state for each. The ratio "
                "is cigri's rate / the baseline's (higher is better).",
                bench.dispatch,
            ),
            (
                "Polling cost",
                f"One `OarRest.states()` of every job, with {small} vs {large:,} active jobs ({CORES} Running, the "
                "others Waiting), one array on a fresh state each; requests counted in the server's request log. "
                "Target: one paginated bulk query per pass, i.e. ceil(jobs / page_size) requests, growing with "
                f"pages, not jobs. cigri's default page_size is {bench.page_size}; page_size 100 is shown too. The "
                f"ratio is {large:,} jobs / {small} jobs.",
                bench.polling,
            ),
        ]
    )


if __name__ == "__main__":
    main()
