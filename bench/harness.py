"""What the bench scripts share: their common options, the run's circumstances, measures run and timed side
by side (the median of repeats, ratios), simulations run side by side, processes and their bookkeeping, and
the report: docs/benchmarks.md, which several scripts write, each only between its own marker lines."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
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
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "bench" / "scenarios"
DOC = ROOT / "docs" / "benchmarks.md"
SLURM_ENV = Path("/run/slurm/ci.env")  # written by scripts/slurm-local.sh start
COMMAND_TIMEOUT = 900.0  # seconds; a command that runs longer is killed and the measure fails

HEADER = (
    "# Benchmarks\n\n"
    "Thirteen scripts write this file, each only its own section (between its marker lines): `bench/run_core.py` "
    "(cigri's core costs, local cluster), `bench/run_slurm.py` (the Slurm adapters against a real Slurm), "
    "`bench/run_packing.py` (packed short jobs against one array task per job on a real Slurm), "
    "`bench/run_sim.py` (the simulator and the fifo baseline), `bench/run_policies.py` (every strategy on "
    "every scenario), `bench/run_flow.py` (every flow strategy on every scenario), `bench/run_decision.py` "
    "(the cost of one metascheduler decision), `bench/run_eta.py` (the error of Spritz's estimated end in the "
    "simulator), `bench/run_oar.py` (the OAR adapters against the contract OAR of `tests/oar`), "
    "`bench/run_blackhole.py` (black holes in the simulator: when they are blacklisted, what they cost), "
    "`bench/run_locality.py` (the job pickers on files: bytes staged and makespan), `bench/run_speed.py` (the "
    "simulator's CPU time against a reference commit) and `bench/run_monotone.py` (the simulator with a cluster "
    "removed or added). Running one leaves the "
    "others' sections as they are; all of them share `bench/harness.py`.\n"
)


# ---- options ---------------------------------------------------------------------------------------


def arguments(
    doc: str,
    *,
    quick: str | None = None,
    repeats: int | None = None,
    seeds: int | None = None,
    jobs: bool = False,
    only: Sequence[str] | None = None,
    keep: bool = False,
) -> argparse.ArgumentParser:
    """A script's argument parser with the common options it takes (it adds its own): ``--quick`` (``quick``
    is its help), ``--repeats N`` (default ``repeats``), ``--seeds N`` (seeds 1..N, default ``seeds``),
    ``--jobs N`` (simulations side by side), ``--only NAME`` (repeatable, among ``only``), ``--save DIR`` and
    ``--render DIR`` (each simulation's figures kept as it ends; the section written from kept figures), and
    always ``--output`` (the report whose section to rewrite, docs/benchmarks.md by default)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if quick:
        parser.add_argument("--quick", action="store_true", help=quick)
    if repeats:
        parser.add_argument(
            "--repeats", type=positive, default=repeats, help=f"repeats per measure; the median is kept ({repeats})"
        )
    if seeds:
        parser.add_argument("--seeds", type=positive, default=seeds, help=f"seeds 1..N (default {seeds})")
    if jobs:
        parser.add_argument("--jobs", type=positive, default=1, help="simulations run side by side")
    if only:
        parser.add_argument("--only", action="append", choices=list(only), help="these scenarios only (repeatable)")
    if keep:
        parser.add_argument("--save", type=Path, help="keep each simulation's figures in this folder as it ends")
        parser.add_argument(
            "--render", type=Path, help="write the section from the figures kept in this folder, simulating nothing"
        )
    parser.add_argument(
        "--output", type=Path, default=DOC, help="the report whose section to rewrite (- or /dev/stdout: print it)"
    )
    return parser


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def command(script: str, parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """``python SCRIPT`` and the options of ``args`` that differ from their defaults (``--output`` last)."""
    defaults = vars(parser.parse_args([]))
    words = ["python", script]
    values = vars(args)
    for dest in sorted(values, key=lambda d: d == "output"):
        value, default = values[dest], defaults.get(dest)
        if isinstance(value, Path) and isinstance(default, Path):
            value, default = value.resolve(), default.resolve()
        if value == default or (isinstance(value, list) and tuple(value) == default):
            continue
        flag = "--" + dest.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, list) and default is None:  # a repeatable option
            words += [word for item in value for word in (flag, str(item))]
        elif isinstance(value, list | tuple):
            words += [flag, *map(str, value)]
        else:
            words += [flag, str(args.output if dest == "output" else value)]
    return " ".join(words)


# ---- the run's circumstances ---------------------------------------------------------------------------


def code_version(root: Path = ROOT) -> str:
    """The commit the benchmarked code is at, and whether cigri/ has uncommitted changes."""
    try:
        head = git(root, "rev-parse", "--short", "HEAD")
        dirty = git(root, "status", "--porcelain", "--", "cigri")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    changed = f" with uncommitted changes in {len(dirty.splitlines())} file(s) of cigri/" if dirty else ""
    return f"commit {head}{changed}"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


def cpu_model() -> str:
    """The CPU's model name, from /proc/cpuinfo."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")


def utc_now() -> str:
    """Now, ``YYYY-MM-DD HH:MM`` in UTC (the caller says "UTC")."""
    return f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M}"


def stamp(python: bool = True) -> str:
    """``cigri code commit ABC, YYYY-MM-DD HH:MM UTC[, Python X.Y.Z]``: what ran, when (and on what)."""
    return f"cigri code {code_version()}, {utc_now()} UTC" + (f", Python {platform.python_version()}" if python else "")


def local_now() -> str:
    """Now, ``YYYY-MM-DD HH:MM ZONE`` in local time."""
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def machine(extra: str = "") -> str:
    """``nproc N (CPU model EXTRA), Linux RELEASE``."""
    return f"nproc {len(os.sched_getaffinity(0))} ({cpu_model()}{extra}), Linux {platform.release()}"


def run_lines(
    command: str, *, quick: bool = False, utc: bool = False, ram: bool = False, software: str = ""
) -> list[str]:
    """The first lines of a report's Run list: the code, the date (local time, or ``utc``), the command (in
    ``quick`` mode), the machine (with its RAM: ``ram``; then ``software``, its versions)."""
    return [
        f"- cigri code: {code_version()}",
        f"- Date: {f'{utc_now()} UTC' if utc else local_now()}",
        f"- Command: `{command}`" + (" (quick mode: smaller sizes, a smoke run)" if quick else ""),
        f"- Machine: {machine(memory() if ram else '')}" + (f"; {software}" if software else ""),
    ]


def memory() -> str:
    """``, N GB RAM`` (empty when /proc/meminfo cannot be read)."""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return ""
    return f", {kb / 1024 / 1024:.0f} GB RAM"


# ---- measures side by side ------------------------------------------------------------------------------


def med(values: Sequence[float]) -> float:
    return statistics.median(values)


def side_by_side(
    repeats: int, measures: dict[str, Callable[[int], float]], progress: Callable[[int, dict], str] | None = None
) -> dict[str, list[float]]:
    """Every measure (called with the repeat's number) ``repeats`` times, interleaved (one of each, then again)
    so that the machine's noise hits them alike: the samples by measure; ``progress(rep, samples)`` is logged
    after each round."""
    taken: dict[str, list[float]] = {name: [] for name in measures}
    for rep in range(repeats):
        for name, measure in measures.items():
            taken[name].append(measure(rep))
        if progress:
            log(f"   rep {rep}: {progress(rep, taken)}")
    return taken


def fs(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds < 10 else f"{seconds:.2f} s"


def fms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 0.1 else fs(seconds)


def fmb(kb: float) -> str:
    return f"{kb / 1024:.0f} MB"


def fx(ratio: float) -> str:
    return f"{ratio:.2f}x"


def fixed(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def samples(values: Sequence[float], unit: str = "s") -> str:
    if unit == "MB":
        return ", ".join(f"{v / 1024:.0f}" for v in values) + " MB"
    return ", ".join(f"{v:.3f}" for v in values) + " s"


# ---- the report ---------------------------------------------------------------------------------------------


@dataclass
class Row:
    measure: str
    cigri: str
    baseline: str
    ratio: str
    target: str = "-"
    met: str = "-"

    @classmethod
    def times(cls, measure: str, cigri: float, baseline: float, target: str = "-", met: str = "-") -> Row:
        """Two times in seconds and their ratio, cigri's / the baseline's."""
        return cls(measure, fs(cigri), fs(baseline), fx(cigri / baseline), target, met)


@dataclass
class Section:
    title: str
    intro: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None


def section_lines(sections: Sequence[Section], heading: str = "##") -> tuple[list[str], list[str]]:
    """The markdown of benchmark sections, numbered except diagnostics, and the targets they missed."""
    out: list[str] = []
    missed: list[str] = []
    for number, sec in enumerate(sections, 1):
        title = sec.title if sec.title.startswith("Diagnostics") else f"{number}. {sec.title}"
        out += [f"{heading} {title}", "", sec.intro, ""]
        if sec.error:
            out += [f"**This benchmark failed:** `{sec.error}`", ""]
        if sec.rows:
            out += ["| measure | cigri | baseline | ratio | target | met? |", "|---|---|---|---|---|---|"]
            for r in sec.rows:
                cells = [c.replace("|", "\\|") for c in (r.measure, r.cigri, r.baseline, r.ratio, r.target, r.met)]
                out.append("| " + " | ".join(cells) + " |")
                if r.met.startswith("**NO**"):
                    missed.append(f"{r.measure}: {r.met.replace('**NO**: ', '')}")
            out.append("")
        for note in sec.notes:
            out += [note, ""]
    return out, missed


def begin_end(script: str) -> tuple[str, str]:
    return f"<!-- {script}: begin -->", f"<!-- {script}: end -->"


def read_section(path: Path, script: str) -> str:
    """What ``script``'s section of the report ``path`` holds now (empty when there is none)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    begin, end = begin_end(script)
    return text.split(begin, 1)[1].split(end, 1)[0] if begin in text and end in text else ""


def write_section(path: Path, script: str, body: str, header: str = HEADER) -> None:
    """Replace the text between ``<!-- SCRIPT: begin -->`` and ``<!-- SCRIPT: end -->`` in ``path`` (appending
    the section when it is not there yet; a new file starts with ``header``), or print the body when ``path``
    is ``-`` or /dev/stdout."""
    if str(path) in ("-", "/dev/stdout"):
        print(body)
        return
    begin, end = begin_end(script)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    text = text if text.strip() else header.rstrip() + "\n"
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin in text and end in text:
        before, rest = text.split(begin, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {script}'s section of {path}", flush=True)


# ---- simulations side by side ---------------------------------------------------------------------------


def quiet() -> None:
    """Simulated outages are expected, not news: cigri's log shows errors only."""
    logging.getLogger("cigri").setLevel(logging.ERROR)


def yaml_scenario(path: Path, seed: int) -> dict:
    """A scenario's YAML as data, on ``seed`` (for a script to change before :func:`cigri.sim.scenario.parse`)."""
    import yaml  # cigri's virtualenv has it; the scripts that run real processes need only the standard library

    data = yaml.safe_load(path.read_text())
    data["seed"] = seed
    return data


def table_header(columns: Sequence[str]) -> str:
    return "| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|"


def result_rows(
    keys: Sequence[tuple[str, str]], results: dict, walls: dict, row: Callable[[str, str, dict, float], str], width: int
) -> list[str]:
    """``row(scenario, label, result, wall)`` for each (scenario, label) of ``keys``, in order; those with no
    figures (not simulated in this session) marked *not run* in a table ``width`` columns wide."""
    return [
        row(s, label, results[s, label], walls[s, label])
        if (s, label) in results
        else f"| {s} | {label} | not run |" + " |" * (width - 3)
        for s, label in keys
    ]


def keep(folder: Path, scenario: str, label: str, wall: float, result: dict) -> None:
    """Save one simulation's figures in ``folder`` as it ends (a later ``--render`` reads them back)."""
    folder.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", f"{scenario} {label}".lower()).strip("-")
    (folder / f"{slug}.json").write_text(
        json.dumps({"scenario": scenario, "label": label, "wall": wall, "result": result})
    )


def kept(folder: Path) -> tuple[dict[tuple[str, str], dict], dict[tuple[str, str], float]]:
    """The figures :func:`keep` saved in ``folder``: results and wall times by (scenario, label)."""
    results, walls = {}, {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        key = data["scenario"], data["label"]
        results[key], walls[key] = data["result"], data["wall"]
    return results, walls


def simulations(
    simulate: Callable[..., tuple[str, str, dict, float]],
    tasks: Sequence[tuple],
    *,
    jobs: int = 1,
    save: Path | None = None,
    render: Path | None = None,
) -> tuple[dict[tuple[str, str], dict], dict[tuple[str, str], float], float]:
    """Results and wall times by (scenario, label) of ``simulate(*task, save)`` for every task, in this
    process or ``jobs`` processes side by side (each printed as it ends), or the figures kept in ``render``;
    and the total wall time."""
    if render:
        results, walls = kept(render)
        return results, walls, sum(walls.values())
    results, walls = {}, {}
    started = time.perf_counter()
    columns = [*zip(*tasks, strict=True), [save] * len(tasks)]
    quiet()
    with contextlib.ExitStack() as stack:
        if jobs > 1:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs, initializer=quiet))
            ended = pool.map(simulate, *columns)
        else:
            ended = map(simulate, *columns)
        for scenario, label, result, wall in ended:
            print(f"{scenario} / {label}: {wall:.1f} s", flush=True)
            results[scenario, label], walls[scenario, label] = result, wall
    return results, walls, time.perf_counter() - started


def measured(
    simulation, scenario: str, label: str, save: Path | None, extra: Callable[..., dict] | None = None
) -> tuple[str, str, dict, float]:
    """Run a :class:`cigri.sim.run.Simulation` to its end: (scenario, label, its figures without the
    per-campaign list and with ``extra(simulation)``'s, wall seconds), kept in ``save`` when given."""
    start = time.perf_counter()
    try:
        result = simulation.run()
        if extra is not None:
            result.update(extra(simulation))
    finally:
        simulation.cycle.close()
        simulation.store.close()
    result.pop("campaigns", None)
    wall = time.perf_counter() - start
    if save is not None:
        keep(save, scenario, label, wall, result)
    return scenario, label, result, wall


# ---- processes ---------------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


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
    """The folder of cigri's commands: the project's virtualenv, else where ``grid`` is on the PATH."""
    venv = ROOT / ".venv" / "bin"
    if (venv / "grid").exists():
        return venv
    grid = shutil.which("grid")
    if grid:
        return Path(grid).resolve().parent
    sys.exit(f"{Path(sys.argv[0]).name}: cannot find cigri's `grid` command (.venv/bin/grid or on PATH)")


class Runner:
    """Runs commands (cigri's own from ``bin_dir`` first on the PATH) in ``workdir``, timed."""

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

    def grid(self, state: Path, *args, **kw) -> Proc:
        return self.run([self.bin / "grid", "--state", state, *args], **kw)

    def gridsub(self, state: Path, jdl: Path) -> tuple[Proc, int]:
        proc = self.run([self.bin / "gridsub", "--state", state, jdl])
        match = re.search(r"CAMPAIGN_ID=(\d+)", proc.out)
        if not match:
            raise BenchError(f"gridsub printed no CAMPAIGN_ID:\n{proc.out}\n{proc.err}")
        return proc, int(match.group(1))


def write_jdl(path: Path, name: str, exec_file: str, directory: Path, param_file: Path, cluster: str = "local") -> None:
    """A campaign of ``exec_file`` with the parameters of ``param_file``, run in ``directory`` on ``cluster``."""
    path.write_text(
        f"name: {name}\n"
        f"exec_file: {exec_file}\n"
        f"exec_directory: {directory}\n"
        'walltime: "00:10:00"\n'
        "clusters:\n"
        f"  {cluster}: {{}}\n"
        f"param_file: {param_file}\n",
        encoding="utf-8",
    )


def job_counts(state: Path, campaign_id: int) -> dict[str, int]:
    """A campaign's jobs by state, read from a cigri state."""
    with closing(sqlite3.connect(state, timeout=30)) as conn:
        return dict(conn.execute("SELECT state, n FROM job_counts WHERE campaign_id = ?", (campaign_id,)))


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


def kill_leftovers(root: Path, spare: Callable[[str], bool] = lambda cmdline: False) -> list[tuple[int, str]]:
    """SIGTERM the processes left under ``root`` (but those ``spare`` keeps), SIGKILL those still there 2 s
    later; the ones found."""
    found = [(pid, cmd) for pid, cmd in leftovers(root) if not spare(cmd)]
    for pid, _ in found:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    if found:
        time.sleep(2)
        for pid, cmd in leftovers(root):
            if not spare(cmd):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        log(f"killed {len(found)} processes left behind: {found}")
    remaining = [(pid, cmd) for pid, cmd in leftovers(root) if not spare(cmd)]
    if remaining:
        log(f"WARNING: processes still alive after cleanup: {remaining}")
    return found


def slurm_env() -> dict[str, str]:
    """The local Slurm's settings (scripts/slurm-local.sh), after checking that slurmctld answers."""
    name = Path(sys.argv[0]).name
    if not SLURM_ENV.exists():
        sys.exit(f"{name}: {SLURM_ENV} is missing: start Slurm with scripts/slurm-local.sh start")
    env = dict(line.split("=", 1) for line in SLURM_ENV.read_text().splitlines() if "=" in line)
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, check=False)
    if "UP" not in ping.stdout:
        sys.exit(f"{name}: slurmctld does not answer: {ping.stdout.strip() or ping.stderr.strip()}")
    return env


def slurm_ssh(env: dict[str, str], remote_dir: Path) -> dict:
    """The settings of a slurm-ssh cluster on the local Slurm: its test user, no accounting."""
    return {
        "host": env["SSH_HOST"],
        "port": int(env["SSH_PORT"]),
        "identity_file": env["SSH_KEY"],
        "user": env["SLURM_TEST_USER"],
        "partition": env["SLURM_PARTITION"],
        "accounting": "none",
        "remote_dir": str(remote_dir),
    }


def cluster_options(config: dict) -> list[str]:
    """A cluster's settings as ``gridclusters add`` options (``identity_file`` as ``--identity-file``)."""
    return [word for key, value in config.items() for word in (f"--{key.replace('_', '-')}", str(value))]


class Bench:
    """One run of a script's measures: a temporary folder, sections of rows (a failing section is reported
    and the others still run), raw samples, and at the end the processes left in the folder killed and the
    folder removed. A script sets ``script`` and ``heading`` (of its sections) and adds its measures."""

    script = ""
    heading = "##"

    def __init__(self, args: argparse.Namespace, prefix: str, *, shared: bool = False):
        """``shared``: the folder is under /tmp, mode 0777 (another user, e.g. Slurm's test user, writes there)."""
        self.args = args
        self.reps = getattr(args, "repeats", 1)
        self.output = Path(args.output)
        self.tmp = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp" if shared else None)).resolve()
        if shared:
            self.tmp.chmod(0o777)
        self.sections: list[Section] = []
        self.raw: list[str] = []
        self.left_behind: list[tuple[int, str]] = []
        self.wall = 0.0  # seconds the measures took, cleanup included

    def setup(self) -> None:
        """What the measures need first (nothing here)."""

    def after_section(self) -> None:
        """Run after every section, failed or not (nothing here)."""

    def record(self, label: str, values: Sequence[float], unit: str = "s") -> None:
        self.raw.append(f"- {label}: {samples(values, unit)}")

    def section(self, title: str, intro: str, func: Callable[[Section], object]) -> Section:
        section = Section(title, intro)
        self.sections.append(section)
        log(f"== {title}")
        try:
            func(section)
        except Exception as exc:  # a failing measure is reported, the others still run
            section.error = f"{type(exc).__name__}: {exc}"
            log(f"FAILED: {section.error}\n{traceback.format_exc()}")
        finally:
            self.after_section()
        for row in section.rows:
            log(f"   {row.measure}: cigri {row.cigri} | baseline {row.baseline} | {row.ratio} | {row.met}")
        return section

    def run(self, plan: Sequence[tuple[str, str, Callable[[Section], object]]]) -> str:
        """:meth:`measure` the plan, then :meth:`write` the script's section and print it: its text."""
        self.measure(plan)
        text = self.write()
        log(f"done in {self.wall:.0f} s")
        print(text)
        return text

    def write(self) -> str:
        """Write the script's section (with :meth:`report`): its text."""
        raise NotImplementedError

    def measure(self, plan: Sequence[tuple[str, str, Callable[[Section], object]]]) -> None:
        """``setup()``, then each (title, intro, measure) of ``plan`` as a section, and the cleanup whatever
        happens; ``wall`` is the seconds it took."""
        started = time.perf_counter()
        try:
            self.setup()
            for title, intro, func in plan:
                self.section(title, intro, func)
        except KeyboardInterrupt:
            log("interrupted: cleaning up")
            self.cleanup()
            raise
        finally:
            if self.tmp.exists():
                self.cleanup()
            self.wall = time.perf_counter() - started

    def spare(self, cmdline: str) -> bool:
        """A process under the folder that cleanup leaves: ssh master connections ([mux]) are shared with
        everyone using the same key, and expire on their own."""
        return "[mux]" in cmdline

    def cleanup(self) -> None:
        self.left_behind = kill_leftovers(self.tmp, self.spare)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def report(self, intro: Sequence[str], run: Sequence[str], summary: Sequence[str] | None = None) -> str:
        """Write the script's section: ``intro``, the run's circumstances, the sections, a summary (the targets
        missed, then ``summary``) unless ``summary`` is None, and the raw samples. Returns its text."""
        h = self.heading
        body, missed = section_lines(self.sections, h)
        out = [*intro, f"{h} Run", "", *run, "", *body]
        if summary is not None:
            out += [f"{h} Summary", ""]
            if missed:
                out += [f"Targets missed ({len(missed)}):", ""] + [f"- {m}" for m in missed] + [""]
            else:
                out += ["Every measured target was met.", ""]
            out += summary
        out += [f"{h} Raw samples", "", *self.raw, ""]
        text = "\n".join(out)
        write_section(self.output, self.script, text)
        return text
