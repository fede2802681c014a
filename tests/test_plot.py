"""gridstat -c ID --plot: the campaign's progress, throughput per cluster and predicted end, in the terminal and
into a PNG, from the state's own records (job ends, Spritz's forecast history)."""

from __future__ import annotations

import struct
import sys
from datetime import datetime

import pytest
from click.testing import CliRunner

from cigri.cli import grid, plot
from cigri.progress import Progress
from cigri.sim.clock import SimClock

from .test_placement import FakeRM
from .test_spritz import spritz_grid

T0 = 1_800_000_000.0  # a simulated clock far from the epoch: what a real campaign's times look like


@pytest.fixture
def campaign(tmp_path, monkeypatch):
    """4 jobs: 2 end on a at +10 s and +20 s, 1 on b at +60 s; forecasts at +70 s and +130 s; one job left."""
    a, b = FakeRM("a", 2, queue_depth=0), FakeRM("b", 1, queue_depth=0)
    state = tmp_path / "state.db"
    g = spritz_grid(a, b, state=state)
    g.clock.t = T0
    cid = g.submit(4)
    g.at(T0)
    a.end(1, T0 + 10, started=T0)
    a.end(2, T0 + 20, started=T0)
    b.end(3, T0 + 60, started=T0)
    g.at(T0 + 70)
    g.at(T0 + 130)
    forecasts = g.store.forecasts(cid)
    g.store.close()
    monkeypatch.setattr("cigri.cli.app.RealClock", lambda: SimClock(T0 + 130))  # gridstat's now: the last pass
    return state, cid, forecasts


def gridstat(state, *args):
    return CliRunner().invoke(grid, ["--state", str(state), "gridstat", *args], catch_exceptions=False)


def test_the_terminal_plot_shows_the_campaigns_figures(campaign):
    state, cid, forecasts = campaign
    result = gridstat(state, "-c", str(cid), "--plot")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"Campaign {cid} (" in out and "3/4 jobs done (75%)" in out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    done_axis = next(line for line in lines if line.endswith("█") and line.split("│")[0].strip())
    assert done_axis.split("│")[0].strip() == "3"  # the chart's top: 3 jobs done
    a_line = next(line for line in lines if line.strip().startswith("a ") and "│" in line)
    b_line = next(line for line in lines if line.strip().startswith("b ") and "│" in line)
    assert a_line.endswith("2 jobs, 55.4/h") and b_line.endswith("1 job, 27.7/h")  # over the 130 s shown
    latest = forecasts[-1]
    assert len(forecasts) == 2 and latest["eta"] is not None
    clock = datetime.fromtimestamp
    expected = f"latest, at {clock(latest['at']):%H:%M:%S}: end {clock(latest['eta']):%H:%M:%S}"
    assert expected in out
    assert f"({clock(latest['eta_low']):%H:%M:%S} to {clock(latest['eta_high']):%H:%M:%S})" in out


def test_plot_output_writes_a_valid_png(campaign, tmp_path):
    state, cid, _ = campaign
    target = tmp_path / "x.png"
    result = gridstat(state, "-c", str(cid), "--plot", "--output", str(target))
    assert result.exit_code == 0, result.output
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (900, 900)
    import matplotlib.image

    assert matplotlib.image.imread(str(target)).shape[:2] == (900, 900)  # it decodes, whole


def test_plot_without_matplotlib_says_how_to_get_it_and_writes_nothing(campaign, tmp_path, monkeypatch):
    state, cid, _ = campaign
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    target = tmp_path / "x.png"
    result = gridstat(state, "-c", str(cid), "--plot", "--output", str(target))
    assert result.exit_code == 4
    hint = f"--output needs matplotlib, in the environment cigri runs in: {sys.executable} -m pip install matplotlib"
    assert result.stderr.strip().endswith(hint)  # what works from a checkout as from an installed package
    assert not target.exists()
    assert gridstat(state, "-c", str(cid), "--plot").exit_code == 0  # the terminal plot needs none


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--plot"], "--plot draws one campaign"),
        (["-c", "1", "--output", "x.png"], "--plot draws one campaign"),
        (["-c", "1", "--plot", "--json"], "--plot draws one campaign"),
        (["-c", "1", "--plot", "--output", "x.svg"], "--output x.svg: the picture is a PNG, name it FILE.png"),
    ],
)
def test_plot_refuses_what_it_cannot_draw(campaign, args, message):
    state, _, _ = campaign
    result = gridstat(state, *args)
    assert result.exit_code == 1 and message in result.stderr and result.stdout == ""


def series(ends: list[float], span: float) -> Progress:
    """A campaign of len(ends) jobs on cluster a, submitted at T0, shown ``span`` seconds later."""
    return Progress(1, "c", len(ends), T0, T0 + span, tuple((T0 + at, "a") for at in ends), ())


def test_the_throughput_axis_starts_at_zero(tmp_path):
    steady = series([60.0 * minute + second for minute in range(10) for second in range(0, 60, 6)], 600.0)
    figure = plot.figure(steady)
    rate = figure.axes[1]
    assert rate.get_ylim()[0] == 0 and rate.get_ylim()[1] > 600  # 10 jobs a minute: 600 jobs/h, all along
    assert [min(line.get_ydata()) for line in rate.get_lines()] == [600.0]


def test_a_campaign_of_seconds_shows_no_throughput_spike():
    quick = series([0.5 + i * 1.5 / 60 for i in range(60)], 2.0)  # 60 jobs ending within 2 s
    assert quick.throughput() == {}  # no rate over less than a minute
    out = plot.text(quick)
    assert "/h" not in out and "a campaign of 2 s: too short for a throughput (a minute at least)" in out
    assert plot.figure(quick).axes[1].get_lines() == []
    longer = series([1.0] * 60 + [70.0], 90.0)  # a burst in its first second, then one job at 70 s
    (rates,) = longer.throughput().values()
    assert rates == [pytest.approx(61 * 3600 / 90)]  # one bin of the whole 90 s: never under a minute
