"""The README's test command is what CI runs, and its first command runs a real campaign, as a new user would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from .conftest import stop_local_daemons

ROOT = Path(__file__).parent.parent


def commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_ci_runs_exactly_the_readme_test_command_with_ci_true():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert commands()[1] == ci[-1]
    assert "export CI=true" in ci[:-1]


def copy_of_the_checkout(destination: Path) -> Path:
    """The files git tracks (and the ones this change adds), without the checkout's venv or caches."""
    ignore = shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", ".pytest_cache", ".pytest-tmp", ".ruff_cache", ".hypothesis"
    )
    shutil.copytree(ROOT, destination, ignore=ignore)
    return destination


def test_the_first_command_runs_its_campaign_to_the_end_in_a_fresh_venv(tmp_path):
    checkout = copy_of_the_checkout(tmp_path / "checkout")
    home = tmp_path / "home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CIGRI_", "VIRTUAL_ENV"))}
    env["HOME"] = str(home)
    try:
        first = subprocess.run(["bash", "-c", commands()[0]], cwd=checkout, env=env, capture_output=True, text=True)
        assert first.returncode == 0, first.stderr
        stat = subprocess.run(
            [checkout / ".venv" / "bin" / "gridstat", "--json"], env=env, capture_output=True, text=True, check=True
        )
    finally:
        stop_local_daemons(home / ".local" / "share" / "cigri")
    campaigns = json.loads(stat.stdout)
    assert [(c["state"], c["done"], c["total"]) for c in campaigns] == [("terminated", 60, 60)]
