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
