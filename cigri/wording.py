"""How messages count things: "1 job", "0 jobs", "2 jobs"; never "1 jobs"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, in the plural (``plural``, else ``noun`` + s) unless ``n`` is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
