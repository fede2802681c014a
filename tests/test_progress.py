"""almighty's progress: a live bar per campaign on a terminal (its real job count from the first pass, its
throughput and the time left to its estimated end), and --progress SECONDS lines without one."""

from __future__ import annotations

import io
import re

from rich.console import Console

from cigri.cli.cycle_cmds import _Bars
from cigri.sim.clock import SimClock
from cigri.store import Store

from .conftest import write_jdl


def test_the_bar_counts_every_job_from_the_start_and_shows_rate_and_eta(cli, state, tmp_path):
    cid = cli.submit(write_jdl(tmp_path, exec_file="true", params=[f"p{i}" for i in range(300)]))
    store = Store(state)
    screen = io.StringIO()
    bars = _Bars(store, SimClock(1000.0), Console(file=screen, force_terminal=True, width=160))
    shown = bars.bars.tasks[0]
    assert (shown.completed, shown.total, shown.fields["left"]) == (0, 300, "ETA -")  # before any pass
    store.set_forecast(cid, 1000.0, 0, 0.5, 1600.0, rate=0.5, left=300)  # Spritz: 1800 jobs/h, the end at 1600
    bars.update()
    with bars:
        pass
    text = screen.getvalue()
    assert "0/300" in text and "1800.0 jobs/h" in text and "ETA 00:10:00" in text
    store.close()


def test_without_a_terminal_progress_prints_a_line_every_n_seconds(cli, tmp_path, job_script):
    cli.submit(write_jdl(tmp_path, exec_file=str(job_script), params=[f"p{i} sleep:1" for i in range(4)]))
    out = cli("almighty", "--until-done", "--period", "0.2", "--timeout", "60", "--progress", "0.5")
    lines = [line for line in out.splitlines() if " campaign 1 t: " in line]
    assert lines, out
    pattern = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d campaign 1 t: \d/4 \(\d+%\), [-0-9.]+ jobs/h, (ETA [-0-9:]+|\w+)$"
    assert all(re.match(pattern, line) for line in lines), lines
    assert lines[-1].endswith(": 4/4 (100%), " + lines[-1].split(", ")[1] + ", terminated")
    # once Spritz has figures, the line has them
    assert any(re.search(r", \d+\.\d jobs/h, ETA \d\d:\d\d:\d\d$", line) for line in lines), lines
    assert len(lines) < 20  # one every half second, not one a pass


def test_progress_wants_a_positive_number_of_seconds(cli):
    out = cli("almighty", "--progress", "0", code=2)
    assert out.strip().splitlines() == [
        "grid almighty: error: Invalid value for '--progress': 0.0 is not in the range x>0 (see grid almighty --help)"
    ]
