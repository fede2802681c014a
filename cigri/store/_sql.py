"""Helpers every mixin of :class:`~cigri.store.Store` may use to build its SQL."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

CHUNK = 900  # stays under SQLite's default limit of host parameters per statement


def _chunks(items: Sequence, size: int = CHUNK) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _marks(n: int) -> str:
    return ",".join("?" * n)
