"""How a campaign's prologue or epilogue run on a cluster is recorded (``campaign_clusters.<stage>_remote``):
its submission as ``<remote id>#<attempt>``, a run to try again as ``retry:<attempt>:<previous remote id>``.
Read by the cycle, which runs the stages, and by the campaign commands, which resubmit them."""

from __future__ import annotations

RETRY = "retry:"  # a stage to run again keeps "retry:<attempt>:<previous remote id>": the next key derives from it


def stage_remote(value: str) -> tuple[str, int]:
    """(remote id, attempt) of a submitted prologue/epilogue, stored as "<remote id>#<attempt>"."""
    remote, _, attempt = value.partition("#")
    return remote, int(attempt or 0)


def stage_retry(value: str | None) -> tuple[int, str] | None:
    """(attempt, previous remote id) of a stage waiting to run again, or None for a first run."""
    if not value or not value.startswith(RETRY):
        return None
    attempt, _, previous = value.removeprefix(RETRY).partition(":")
    return int(attempt), previous
