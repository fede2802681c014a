"""What a test does when the real system it needs is missing (Slurm, OAR, root): with CI=true it fails, since a
skipped real-system test is not a pass; elsewhere it is skipped, saying what to start or run."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(message: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
