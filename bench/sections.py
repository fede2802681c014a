"""docs/benchmarks.md is written by several scripts, each only between its own marker lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

HEADER = (
    "# Benchmarks\n\n"
    "Seven scripts write this file, each only its own section (between its marker lines): `bench/run_core.py` "
    "(cigri's core costs, local cluster), `bench/run_slurm.py` (the Slurm adapters against a real Slurm), "
    "`bench/run_sim.py` (the simulator and the fifo baseline), `bench/run_policies.py` (every strategy on "
    "every scenario), `bench/run_decision.py` (the cost of one metascheduler decision) and `bench/run_oar.py` "
    "(the OAR adapters against the contract OAR of `tests/oar`) and `bench/run_eta.py` (the error of Spritz's "
    "estimated end in the simulator). Running one leaves the others' sections as "
    "they are.\n"
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
