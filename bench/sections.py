"""docs/benchmarks.md is written by several scripts, each only between its own marker lines."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HEADER = (
    "# Benchmarks\n\n"
    "Ten scripts write this file, each only its own section (between its marker lines): `bench/run_core.py` "
    "(cigri's core costs, local cluster), `bench/run_slurm.py` (the Slurm adapters against a real Slurm), "
    "`bench/run_packing.py` (packed short jobs against one array task per job on a real Slurm), "
    "`bench/run_sim.py` (the simulator and the fifo baseline), `bench/run_policies.py` (every strategy on "
    "every scenario), `bench/run_flow.py` (every flow strategy on every scenario), `bench/run_decision.py` "
    "(the cost of one metascheduler decision), `bench/run_eta.py` (the error of Spritz's estimated end in the "
    "simulator), `bench/run_oar.py` (the OAR adapters against the contract OAR of `tests/oar`) and "
    "`bench/run_blackhole.py` (black holes in the simulator: when they are blacklisted, what they cost). Running "
    "one leaves the others' sections as they are.\n"
)


def code_version(root: Path) -> str:
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


def write_section(path: Path, script: str, body: str, header: str) -> None:
    """Replace the text between ``<!-- SCRIPT: begin -->`` and ``<!-- SCRIPT: end -->`` (appending the
    section when it is not there yet); a new file starts with ``header``."""
    begin, end = f"<!-- {script}: begin -->", f"<!-- {script}: end -->"
    text = path.read_text() if path.exists() else header.rstrip() + "\n"
    block = f"{begin}\n{body.strip()}\n{end}"
    if begin in text and end in text:
        before, rest = text.split(begin, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def section_lines(sections, heading: str = "##") -> tuple[list[str], list[str]]:
    """The markdown of benchmark sections (each with ``title``, ``intro``, ``error``, ``rows`` and ``notes``;
    a row has ``measure``, ``cigri``, ``baseline``, ``ratio``, ``target`` and ``met``), numbered except
    diagnostics, and the targets they missed."""
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
    jobs: int,
    save: Path | None,
    render: Path | None,
) -> tuple[dict[tuple[str, str], dict], dict[tuple[str, str], float], float]:
    """Results and wall times by (scenario, label) of ``simulate(*task, save)`` for every task, ``jobs``
    processes side by side (each printed as it ends), or the figures kept in ``render``; and the total
    wall time."""
    if render:
        results, walls = kept(render)
        return results, walls, sum(walls.values())
    results, walls = {}, {}
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for scenario, label, result, wall in pool.map(simulate, *zip(*tasks, strict=True), [save] * len(tasks)):
            print(f"{scenario} / {label}: {wall:.1f} s", flush=True)
            results[scenario, label], walls[scenario, label] = result, wall
    return results, walls, time.perf_counter() - started


def measured(simulation, scenario: str, label: str, save: Path | None) -> tuple[str, str, dict, float]:
    """Run a :class:`cigri.sim.run.Simulation` to its end: (scenario, label, its figures without the
    per-campaign list, wall seconds), kept in ``save`` when given."""
    start = time.perf_counter()
    try:
        result = simulation.run()
    finally:
        simulation.cycle.close()
        simulation.store.close()
    result.pop("campaigns", None)
    wall = time.perf_counter() - start
    if save is not None:
        keep(save, scenario, label, wall, result)
    return scenario, label, result, wall
