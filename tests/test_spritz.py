"""Spritz: the windowed throughput, the durations' spread, the estimated end and its interval, the forecast
history's bound, what gridstat shows of them, what the metascheduler's snapshot takes from them, and how the
simulator judges the estimated end."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from cigri import campaigns as ops
from cigri import config, scheduling
from cigri.cycle import Cycle
from cigri.model import RemoteState
from cigri.prediction import Sample, Spread, Windowed, harmonic, predictor
from cigri.sim.run import eta_error, eta_errors
from cigri.store import Store

from .conftest import Grid as CliGrid
from .conftest import write_jdl
from .test_placement import PATIENCE, FakeRM, Grid
from .test_snapshot import Probe


def spritz_grid(*clusters: FakeRM, window: float = 600.0, state: Path | str = ":memory:") -> Grid:
    """Fake clusters on a simulated clock, Spritz's window ``window`` seconds (buckets of window / 12)."""
    grid = Grid(*clusters, state=state)
    grid.cycle = Cycle(
        grid.store,
        grid.clock,
        adapters=grid.clusters.__getitem__,
        patience=PATIENCE,
        forecaster=predictor("window", window),
    )
    return grid


def test_the_throughput_counts_the_terminations_of_the_sliding_window():
    a = FakeRM("a", 8)
    grid = spritz_grid(a)
    cid = grid.submit(6)
    grid.at(0)
    for job in (1, 2, 3, 4):
        a.start(job, 0.0)
    a.end(1, 100.0)
    a.end(2, 120.0)
    grid.at(150)  # the window reaches before the submission: 2 ends over the 150 s since
    assert grid.store.stats(cid)["rate"] == pytest.approx(2 / 150)
    a.end(3, 700.0)
    a.end(4, 710.0)
    grid.at(800)  # the window's first bucket starts at 200 (buckets of 50 s): the ends at 100 and 120 are out
    assert grid.store.stats(cid)["rate"] == pytest.approx(2 / 600)
    assert grid.store.cluster_stats(cid)["a"]["rate"] == pytest.approx(2 / 600)
    assert grid.store.window_ends(cid, 0.0) == {"a": 2}  # the older bucket is gone


def test_mean_and_std_come_from_running_sums_per_campaign_and_cluster(tmp_path):
    a, b = FakeRM("a", 2, queue_depth=0), FakeRM("b", 1, queue_depth=0)
    grid = spritz_grid(a, b, state=tmp_path / "state.db")
    cid = grid.submit(4)
    grid.at(0)
    assert (a.holds(RemoteState.PENDING), b.holds(RemoteState.PENDING)) == ([1, 2], [3])
    a.end(1, 10.0, started=0.0)
    a.end(2, 20.0, started=0.0)
    b.end(3, 60.0, started=0.0)
    grid.at(70)
    shown = CliGrid(tmp_path / "state.db").json("gridstat", "-c", str(cid))
    # 10, 20, 60: mean 30, std sqrt((100 + 400 + 3600) / 3 - 30^2) = sqrt(466.67)
    assert (shown["average_duration"], shown["stddev_duration"]) == (30.0, pytest.approx(21.6025, abs=1e-4))
    per_cluster = {c["cluster"]: c for c in shown["clusters"]}
    assert (per_cluster["a"]["average_duration"], per_cluster["a"]["stddev_duration"]) == (15.0, 5.0)
    assert (per_cluster["b"]["average_duration"], per_cluster["b"]["stddev_duration"]) == (60.0, 0.0)
    assert shown["left"] == 1  # the fourth job, waiting
    assert [(row["at"], row["left"]) for row in shown["forecasts"]] == [(70.0, 1)]  # the history, so far


def test_spread_of_no_job_is_unknown():
    assert Spread.of(0, 0.0, 0.0) == Spread(0, None, None, None)
    assert Spread.of(2, 4.0, 8.0) == Spread(2, 2.0, 0.0, None)


def test_the_end_drains_the_jobs_left_on_the_slots_then_waits_for_the_longest_with_an_interval():
    sample = Sample(1000.0, 20, 30, running=10, durations=Spread(20, 100.0, 150.0, 400.0), rate=0.08)
    forecast = Windowed().forecast(sample)
    # drain: 20 jobs beyond the 10 running, 10 at a time of 100 s: 200 s; the longest of the last 10:
    # 100 + 150 x (H(10) - 1) = 389.345 s (under the longest seen, 400 s)
    assert harmonic(10) == pytest.approx(2.928968)
    assert forecast.eta == pytest.approx(1000 + 200 + 389.345, abs=1e-3)
    # sigma^2: (150 x sqrt(20) / 10)^2 = 4500; (150 x pi / sqrt(6))^2 = 37011.02; the window's 0.08 jobs/s
    # is 0.8 of the slots' 10 / 100 s: (200 x 0.2)^2 = 1600
    sigma = math.sqrt(4500 + 37011.02 + 1600)
    assert (forecast.low, forecast.high) == (
        pytest.approx(forecast.eta - 2 * sigma, abs=1e-2),
        pytest.approx(forecast.eta + 2 * sigma, abs=1e-2),
    )
    assert forecast.throughput == 0.08
    capped = Windowed().forecast(replace(sample, durations=Spread(20, 100.0, 150.0, 300.0)))
    assert capped.eta == pytest.approx(1000 + 200 + 300)  # never later than the longest seen
    older = Windowed().forecast(replace(sample, durations=Spread(20, 100.0, 150.0, 300.0), oldest=350.0))
    assert older.eta == pytest.approx(1000 + 200 + 389.345, abs=1e-3)  # unless a running job ran longer


def test_the_running_jobs_count_as_censored_durations():
    early = Sample(0.0, 5, 10, running=10, elapsed=200.0, durations=Spread(5, 100.0, 20.0, 130.0))
    assert Windowed.duration(early) == (140.0, 140.0)  # (5 x 100 + 200) / 5, its spread at least the mean
    spread = Sample(0.0, 20, 10, running=10, elapsed=200.0, durations=Spread(20, 100.0, 120.0, 500.0))
    assert Windowed.duration(spread) == (110.0, 120.0)
    first = Sample(0.0, 0, 10, running=4, elapsed=4 * 30.0)
    assert Windowed.duration(first) == (60.0, None)  # twice the mean elapsed time
    assert Windowed().forecast(Sample(0.0, 0, 10)).eta is None  # nothing ran: no estimate


def test_a_campaign_with_failed_jobs_ends_after_their_fixes():
    done = Spread(99, 100.0, 0.0, 100.0)
    assert Windowed().forecast(Sample(0.0, 99, 1, running=1, durations=done)).eta == pytest.approx(100.0)
    waiting = Sample(0.0, 99, 1, running=1, durations=done, failures=1, fix_delay=600.0, awaiting_since=-50.0)
    assert Windowed().forecast(waiting).eta == pytest.approx(650.0)  # fixed at -50 + 600, then runs 100 s
    sent_later = replace(waiting, previous_at=-60.0)  # a pass every 60 s: one to see it fail, one to resend it
    assert Windowed().forecast(sent_later).eta == pytest.approx(770.0)
    blocked = Sample(0.0, 99, 0, durations=done, failures=1, awaiting_since=-50.0)
    assert Windowed().forecast(blocked).eta is None  # nobody fixed a failed job yet: no telling when
    assert Windowed().forecast(replace(blocked, fix_delay=600.0)).eta == pytest.approx(650.0)
    # 100 jobs left on 50 slots, 10 of 100 jobs failed so far, none elsewhere in the state: a failed fraction
    # of 10 / (100 + 100); the last ones end at 200, then rounds of fixes (600 s) and reruns (the longest of
    # the round's), each by the chance that some fail again
    failing = Sample(0.0, 90, 100, running=50, durations=Spread(90, 100.0, 0.0, 100.0), failures=10, fix_delay=600.0)
    f = 10 / 200
    some = 1 - (1 - f) ** 100
    again = some * (1 - (1 - f) ** (100 * f))
    third = again * (1 - (1 - f) ** (100 * f * f))
    chain = 200 + some * (600 + 100 * harmonic(5)) + again * 700 + third * 700
    assert again > 0.01 > third  # the rounds stop after the third
    assert Windowed().forecast(failing).eta == pytest.approx(chain)


def test_the_forecast_history_keeps_one_a_minute_for_an_hour_then_one_an_hour():
    store = Store(":memory:")
    for t in range(0, 36001, 30):  # ten hours of a pass every 30 s
        store.add_forecasts([(1, "", float(t), 0, 1, None, None, None, None, None, None)], float(t))
    times = [row["at"] for row in store.forecasts(1)]
    recent = [t for t in times if t >= 36000 - 3600]
    older = [t for t in times if t < 36000 - 3600]
    assert len({math.floor(t / 60) for t in recent}) == len(recent) == 61  # minutes 540..600
    assert older == [3600.0 * h + 3570 for h in range(9)]  # the last forecast of each earlier hour
    for t in range(36030, 7 * 86400, 60):  # a week-long campaign stays bounded
        store.add_forecasts([(1, "", float(t), 0, 1, None, None, None, None, None, None)], float(t))
    assert len(store.forecasts(1)) <= 60 + 1 + 7 * 24
    store.close()


def test_gridstat_eta_lists_running_campaigns_by_estimated_end(cli, state, tmp_path):
    ids = [cli.submit(write_jdl(tmp_path, exec_file="true", params=["a", "b"])) for _ in range(3)]
    store = Store(state)
    store.set_forecast(ids[0], 0.0, 0, None, 2_000_000_000.0, left=2, eta_low=1.9e9, eta_high=2.1e9)
    store.set_forecast(ids[1], 0.0, 0, None, 1_900_000_000.0, left=2, eta_low=1.8e9, eta_high=2.0e9)
    store.close()  # the third has no estimate yet: last
    lines = cli("gridstat", "--eta").splitlines()
    assert lines[0].split()[:3] == ["Campaign", "id", "Name"] and "Estimated end" in lines[0]
    assert [int(line.split()[0]) for line in lines[1:]] == [ids[1], ids[0], ids[2]]
    assert [r["id"] for r in cli.json("gridstat", "--eta")] == [ids[1], ids[0], ids[2]]
    assert [int(line.split()[0]) for line in cli("gridstat", "--eta", "-H").splitlines()] == [ids[1], ids[0], ids[2]]


def test_gridstat_refuses_an_unknown_campaign_in_one_line(cli):
    out = cli("gridstat", "-c", "999", code=5)
    assert out.strip() == "grid gridstat: error: no campaign 999"
    out = cli("gridstat", "--eta", "-c", "1", code=1)
    assert len(out.strip().splitlines()) == 1 and "--eta" in out


def test_the_snapshot_takes_spritzs_mean_durations(monkeypatch):
    monkeypatch.setattr("cigri.scheduling._REGISTRY", dict(scheduling._REGISTRY))
    scheduling.register(Probe)
    Probe.seen = []
    a, b = FakeRM("a", 2, queue_depth=0), FakeRM("b", 1, queue_depth=0)
    grid = spritz_grid(a, b)
    config.set_value(grid.store, "metasched", "probe")
    cid = grid.submit(5)
    grid.at(0)
    a.end(1, 10.0, started=0.0)
    a.end(2, 20.0, started=0.0)
    b.end(3, 60.0, started=0.0)
    grid.at(70)
    grid.at(80)  # the ends were read by the updator of the previous pass
    campaign = Probe.seen[-1][0].campaign(cid)
    assert (campaign.estimate, campaign.confidence) == (30.0, 3)
    assert campaign.estimates == {"a": 15.0, "b": 60.0}


def test_the_estimated_ends_error_is_a_share_of_the_time_that_remained():
    assert eta_error(1150.0, 100.0, 1100.0) == pytest.approx(0.05)  # 50 s off with 1000 s left
    assert eta_error(None, 100.0, 1100.0) == math.inf
    assert eta_error(500.0, 100.0, 100.0) is None  # over by that pass: not judged
    marks = {1: {25: (100.0, 1150.0), 50: (600.0, 1000.0)}, 2: {25: (0.0, 300.0)}, 3: {25: (0.0, None)}}
    errors = eta_errors(marks, {1: 1100.0, 2: 200.0, 3: 500.0})
    # at 25 %: 5 %, 50 % and no estimate (infinite): the median is 50 %
    assert errors["25"] == {"n": 3, "ended": 0, "no_estimate": 1, "median_pct": pytest.approx(50.0), "p90_pct": None}
    assert errors["50"]["median_pct"] == pytest.approx(20.0)  # 100 s off with 500 s left
    assert errors["75"]["n"] == 0


def test_the_predictor_and_its_window_are_configuration(cli, state):
    assert "spritz.window: expected a positive number of seconds" in cli("config", "set", "spritz.window", "0", code=4)
    assert "spritz: unknown predictor 'oracle' (valid: ewma, window)" in cli(
        "config", "set", "spritz", "oracle", code=4
    )
    cli("config", "set", "spritz.window", "1800")
    store = Store(state)
    chosen = config.forecaster(store.settings())
    store.close()
    assert (chosen.name, chosen.window) == ("window", 1800.0)


def test_the_clusters_throughputs_add_up_to_the_campaigns_and_their_ends_fit_in_its_interval(tmp_path):
    a, b = FakeRM("a", 4, queue_depth=0), FakeRM("b", 4, queue_depth=0)
    grid = spritz_grid(a, b, state=tmp_path / "state.db")
    cid = grid.submit(40)
    grid.at(0)
    for job in a.holds(RemoteState.PENDING):
        a.start(job, 0.0)
    for job in b.holds(RemoteState.PENDING):
        b.start(job, 95.0)  # b starts its jobs late, then ends two of them at once
    for job in a.holds(RemoteState.RUNNING)[:2]:
        a.end(job, 50.0)
    for job in b.holds(RemoteState.RUNNING)[:2]:
        b.end(job, 99.0)
    grid.at(100)
    shown = CliGrid(tmp_path / "state.db").json("gridstat", "-c", str(cid))
    per_cluster = {c["cluster"]: c for c in shown["clusters"]}
    # 4 ends over the 100 s since the campaign's first start: 144 jobs/h, 72 on each cluster (not b's 2 in 5 s)
    assert shown["throughput_per_hour"] == pytest.approx(144.0)
    assert [per_cluster[name]["throughput_per_hour"] for name in "ab"] == [pytest.approx(72.0)] * 2
    low, high = shown["estimated_end_low"], shown["estimated_end_high"]
    for there in per_cluster.values():
        assert there["estimated_end"] <= shown["estimated_end"]
        assert there["estimated_end_low"] <= there["estimated_end"] <= there["estimated_end_high"] <= high
        assert there["estimated_end_high"] - there["estimated_end_low"] <= high - low


def test_a_blocked_campaign_shows_no_estimated_end(tmp_path):
    a = FakeRM("a", 2, queue_depth=0)
    grid = spritz_grid(a, state=tmp_path / "state.db")
    config.set_value(grid.store, "resubmit.error_retries", 0)  # an error waits for its user
    first = grid.submit(1)
    grid.at(0)
    a.end(1, 10.0, started=0.0, exit_code=1)
    grid.at(20)
    grid.clock.advance_to(320)
    ops.fix_events(grid.store, grid.clock, campaign_id=first, user="alice")  # its user fixed it after 300 s
    cid = grid.submit(2)
    grid.at(330)
    a.end(2, 350.0, started=330.0)
    a.end(3, 360.0, started=330.0, exit_code=1)  # its last job fails: it waits for its user
    grid.at(400)
    assert grid.store.stats(cid)["eta"] is not None  # Spritz's model guesses when its user fixes it
    cli = CliGrid(tmp_path / "state.db")
    shown = cli.json("gridstat", "-c", str(cid))
    assert shown["blocked"] and shown["estimated_end"] is None
    assert shown["estimated_end_low"] is shown["estimated_end_high"] is None
    assert [c["estimated_end"] for c in shown["clusters"]] == [None]
    assert "Estimated end:                         -" in cli("gridstat", "-c", str(cid))
    assert [row["estimated_end"] for row in cli.json("gridstat", "--eta") if row["id"] == cid] == [None]
