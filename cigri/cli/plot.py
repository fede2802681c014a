"""``gridstat -c ID --plot``: a campaign's progress drawn in the terminal (80 columns), or to a PNG with matplotlib.

Three pictures of :class:`cigri.progress.Progress`: jobs done over time, jobs ended per time bin on each cluster,
and the predicted end (with its interval) at each forecast the almighty recorded.
"""

from __future__ import annotations

import sys
from datetime import datetime

from ..errors import ConfigError
from ..progress import MIN_BUCKET, Progress
from ..wording import counted

WIDTH = 60  # plotting columns: with the 11 of the axis labels and its bar, a chart fits in 72
HEIGHT = 8
SPARKS = " ▁▂▃▄▅▆▇█"


def _clock(ts: float, span: float) -> str:
    """A time as the chart's labels say it: the hour within a day's span, else the day too."""
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S" if span < 86400 else "%m-%d %H:%M")


def _step_at(points: list[tuple[float, float]], t: float) -> float | None:
    """The value of the step function ``points`` (time order) at ``t``: the last point's at or before it."""
    value = None
    for at, y in points:
        if at > t:
            break
        value = y
    return value


def _chart(points: list[tuple[float, float]], start: float, end: float, label, fill: bool) -> list[str]:
    """Lines of a text chart of the step function ``points`` over [start, end], y labels by ``label``."""
    span = max(end - start, 1e-9)
    columns = [_step_at(points, start + span * (i + 1) / WIDTH) for i in range(WIDTH)]  # each at its column's end
    values = [v for v in columns if v is not None]
    low, high = (0.0 if fill else min(values)), max(values)
    if high == low:
        high = low + 1
    rows = []
    for row in range(HEIGHT, 0, -1):
        top, bottom = low + (high - low) * row / HEIGHT, low + (high - low) * (row - 1) / HEIGHT
        cells = []
        for v in columns:
            if v is None:
                cells.append(" ")
            elif fill:
                cells.append("█" if v >= top else ("▄" if v > bottom + (top - bottom) / 2 else " "))
            else:
                cells.append("•" if min(HEIGHT, 1 + int((v - low) / (high - low) * HEIGHT)) == row else " ")
        axis = label(high) if row == HEIGHT else label(low) if row == 1 else ""
        rows.append(f"{axis:>10} │{''.join(cells)}")
    left, right = _clock(start, span), _clock(end, span)
    rows.append(f"{'':>10} └{'─' * WIDTH}")
    rows.append(f"{'':>11} {left}{right:>{WIDTH - len(left)}}")
    return rows


def text(p: Progress) -> str:
    """The three pictures as text, readable in 80 columns."""
    percent = f"{100 * p.done / p.total:.0f}%" if p.total else "-"
    span = p.now - p.start
    lines = [f"Campaign {p.campaign_id} ({p.name}): {p.done}/{p.total} jobs done ({percent})", ""]
    lines += ["Jobs done over time"]
    lines += _chart([(t, float(n)) for t, n in p.done_over_time()], p.start, p.now, lambda v: f"{v:.0f}", True)
    lines += ["", f"Throughput per cluster (jobs per hour, over {p.bucket / 60:.0f} min)"]
    throughput = p.throughput()
    if span < MIN_BUCKET:
        lines.append(f"  a campaign of {span:.0f} s: too short for a throughput (a minute at least)")
    elif not throughput:
        lines.append("  no job has ended yet")
    width = max([len(name) for name in throughput] + [7])
    for name, rates in throughput.items():
        top = max(rates)
        spark = "".join(SPARKS[max(1, round(8 * r / top))] if r else SPARKS[0] for r in rates)
        ended = sum(1 for _, cluster in p.ends if cluster == name)
        lines.append(f"  {name[:20]:<{width}} │{spark}│ {counted(ended, 'job')}, {ended * 3600 / span:.1f}/h")
    lines += ["", "Predicted end over time (Spritz's forecasts)"]
    etas = [(f.at, f.eta) for f in p.forecasts if f.eta is not None]
    if not etas:
        lines.append("  no forecast yet (the almighty records one per pass once jobs have ended)")
    else:
        ends = [eta for _, eta in etas]
        eta_span = max(max(ends) - min(ends), span)
        lines += _chart(etas, p.forecasts[0].at, p.now, lambda v: _clock(v, eta_span), False)
        last = p.forecasts[-1]
        interval = (
            f" ({_clock(last.low, eta_span)} to {_clock(last.high, eta_span)})"
            if last.low is not None and last.high is not None
            else ""
        )
        when = _clock(last.eta, eta_span) if last.eta is not None else "unknown"
        lines.append(f"  latest, at {_clock(last.at, eta_span)}: end {when}{interval}")
    return "\n".join(lines) + "\n"


def png(p: Progress, path: str) -> None:
    """The three pictures in one PNG (matplotlib, the ``plot`` extra)."""
    fig = figure(p)
    fig.savefig(path, dpi=100)
    import matplotlib.pyplot as plt

    plt.close(fig)


def needs_matplotlib(option: str) -> ConfigError:
    """The error of ``option`` without matplotlib, saying how to install it where cigri runs: this Python's
    pip (``pip install 'cigri[plot]'`` would look for cigri on PyPI, not here; from a checkout,
    ``pip install -e '.[plot]'`` does it too)."""
    return ConfigError(
        f"{option} needs matplotlib, in the environment cigri runs in: {sys.executable} -m pip install matplotlib"
    )


def figure(p: Progress):
    """The three pictures as one matplotlib figure (ConfigError without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.dates
        import matplotlib.pyplot as plt
    except ImportError:
        raise needs_matplotlib("--output") from None

    def dates(times):
        return [datetime.fromtimestamp(t) for t in times]

    fig, (done, rate, eta) = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    steps = p.done_over_time()
    done.step(dates(t for t, _ in steps), [n for _, n in steps], where="post")
    done.axhline(p.total, linestyle=":", color="grey")
    done.set(title=f"Campaign {p.campaign_id} ({p.name}): {p.done}/{p.total} jobs done", ylabel="jobs done")
    edges = dates(p.edges())
    for name, rates in p.throughput().items():
        rate.step(edges, [*rates, rates[-1]], where="post", label=name)  # the last bin drawn to its end
    rate.set(title="Throughput per cluster", ylabel="jobs per hour")
    rate.set_ylim(bottom=0)
    if p.throughput():
        rate.legend(fontsize="small")
    elif p.now - p.start < MIN_BUCKET:
        rate.text(0.5, 0.5, "too short for a throughput", ha="center", va="center", transform=rate.transAxes)
    forecasts = [f for f in p.forecasts if f.eta is not None]
    if forecasts:
        at = dates(f.at for f in forecasts)
        eta.plot(at, dates(f.eta for f in forecasts), marker=".", label="predicted end")
        banded = [f for f in forecasts if f.low is not None and f.high is not None]
        if banded:
            eta.fill_between(
                dates(f.at for f in banded), dates(f.low for f in banded), dates(f.high for f in banded), alpha=0.25
            )
        eta.legend(fontsize="small")
    else:  # Spritz forecasts while jobs remain: a campaign over within a pass has none
        eta.text(0.5, 0.5, "no forecast recorded", ha="center", va="center", transform=eta.transAxes)
    locator = matplotlib.dates.AutoDateLocator()
    eta.xaxis.set_major_locator(locator)
    eta.xaxis.set_major_formatter(matplotlib.dates.ConciseDateFormatter(locator))
    eta.set(title="Predicted end over time", xlabel="time", ylabel="predicted end")
    fig.autofmt_xdate()
    fig.tight_layout()
    return fig
