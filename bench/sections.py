"""docs/benchmarks.md is written by several scripts, each only between its own marker lines."""

from __future__ import annotations

from pathlib import Path


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
