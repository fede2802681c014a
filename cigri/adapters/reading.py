"""Reading what resource managers answer: a number or a time is taken only when it is one a cluster can
mean, else it is not understood (None), so that a damaged answer makes UNKNOWN states or an
AdapterError, never a crash (see tests/test_fuzz.py).

``str.isdigit()`` is no test of a number: it holds for ``"²"`` and other scripts' digits, which ``int()``
refuses, and ``int()`` refuses more than 4300 digits; JSON numbers may be huge, NaN or infinite.
"""

from __future__ import annotations

import math
import re
from datetime import datetime

LAST_EPOCH = 253_402_300_799  # 9999-12-31 23:59:59 UTC: the last second a datetime (and a date column) holds
_WHOLE = re.compile(r"[0-9]{1,18}")  # below 2**63, what SQLite's integers hold


def whole(text: str) -> int | None:
    """The number ``text`` spells in ASCII digits (at most 18), else None."""
    return int(text) if _WHOLE.fullmatch(text) else None


def count(value: object) -> int | None:
    """A JSON count: a whole number of at most 18 digits (a float with no fraction too), not a boolean."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if abs(value) < 10**18 else None


def epoch(value: object) -> float | None:
    """A moment: seconds since the epoch (a number) or an ISO date; None for 0 ("not yet"), for
    placeholders, and for what no clock reaches (negative, past the year 9999, NaN)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip()).timestamp()
        except (ValueError, OverflowError, OSError):
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 < value <= LAST_EPOCH else None


def listed(value: object) -> list:
    """A JSON list, or none at all for anything else."""
    return value if isinstance(value, list) else []


def one_line(text: str) -> str:
    """Text from a cluster made one line for an error message (its line breaks and runs of blanks as one space)."""
    return " ".join(text.split())
