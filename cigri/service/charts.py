"""The three pictures of ``gridstat -c ID --plot`` as one SVG document, for the dashboard: jobs done over time,
throughput per cluster, and Spritz's predicted end (with its interval) at each forecast. Drawn here from the
same series (:class:`cigri.progress.Progress`), so that the service needs no matplotlib; every text in it is
XML-escaped (a campaign's name is its user's)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from html import escape

from ..progress import MIN_BUCKET, Progress

WIDTH = 760
PANEL = 170  # each picture's height, its title included
LEFT, RIGHT, TOP = 92, 16, 44  # the plotting area's margins within a panel
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")

Point = tuple[float, float]


def _clock(ts: float, span: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S" if span < 86400 else "%m-%d %H:%M")


def _steps(points: Sequence[Point]) -> list[Point]:
    """A step function's corners: each value held until the next point."""
    corners: list[Point] = []
    for index, (t, v) in enumerate(points):
        if index:
            corners.append((t, corners[-1][1]))
        corners.append((t, v))
    return corners


class _Panel:
    """One picture: its place in the document and its axes' ranges."""

    def __init__(self, index: int, title: str, x: tuple[float, float], y: tuple[float, float]):
        self.top = index * PANEL
        self.title = title
        self.x0, self.x1 = x[0], max(x[1], x[0] + 1e-9)
        self.y0, self.y1 = y[0], y[1] if y[1] > y[0] else y[0] + 1
        self.width = WIDTH - LEFT - RIGHT
        self.height = PANEL - TOP - 14
        self.parts: list[str] = []

    def at(self, t: float, v: float) -> str:
        x = LEFT + (t - self.x0) / (self.x1 - self.x0) * self.width
        y = self.top + TOP + self.height - (v - self.y0) / (self.y1 - self.y0) * self.height
        return f"{x:.1f},{y:.1f}"

    def line(self, points: Sequence[Point], colour: str, dashed: bool = False) -> None:
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        coords = " ".join(self.at(t, v) for t, v in points)
        self.parts.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="1.6"{dash}/>')

    def band(self, low: Sequence[Point], high: Sequence[Point], colour: str) -> None:
        coords = " ".join(self.at(t, v) for t, v in [*low, *reversed(high)])
        self.parts.append(f'<polygon points="{coords}" fill="{colour}" fill-opacity="0.25" stroke="none"/>')

    def note(self, text: str) -> None:
        x, y = LEFT + self.width / 2, self.top + TOP + self.height / 2
        self.parts.append(f'<text x="{x:.0f}" y="{y:.0f}" text-anchor="middle" class="note">{escape(text)}</text>')

    def legend(self, names: Sequence[str]) -> None:
        for index, name in enumerate(names):
            x, y = LEFT + 8 + 150 * index, self.top + TOP + 12
            colour = COLOURS[index % len(COLOURS)]
            self.parts.append(f'<rect x="{x}" y="{y - 8}" width="10" height="10" fill="{colour}"/>')
            self.parts.append(f'<text x="{x + 14}" y="{y + 1}">{escape(name[:20])}</text>')

    def render(self, label: Callable[[float], str], span: float) -> str:
        bottom = self.top + TOP + self.height
        axes = (
            f'<text x="{LEFT}" y="{self.top + 26}" class="title">{escape(self.title)}</text>'
            f'<rect x="{LEFT}" y="{self.top + TOP}" width="{self.width}" height="{self.height}" class="frame"/>'
            f'<text x="{LEFT - 6}" y="{self.top + TOP + 10}" text-anchor="end">{escape(label(self.y1))}</text>'
            f'<text x="{LEFT - 6}" y="{bottom}" text-anchor="end">{escape(label(self.y0))}</text>'
            f'<text x="{LEFT}" y="{bottom + 13}">{escape(_clock(self.x0, span))}</text>'
            f'<text x="{WIDTH - RIGHT}" y="{bottom + 13}" text-anchor="end">{escape(_clock(self.x1, span))}</text>'
        )
        return f'<g class="panel">{axes}{"".join(self.parts)}</g>'


def svg(p: Progress) -> str:
    """The three pictures of ``p`` as a standalone SVG document."""
    span = max(p.now - p.start, 1e-9)
    x = (p.start, p.now)
    done = _Panel(0, f"Campaign {p.campaign_id} ({p.name}): {p.done}/{p.total} jobs done", x, (0, max(p.total, 1)))
    done.line(_steps([(t, float(n)) for t, n in p.done_over_time()]), COLOURS[0])
    done.line([(p.start, p.total), (p.now, p.total)], "#999999", dashed=True)

    throughput = p.throughput()
    top = max((max(rates) for rates in throughput.values()), default=1.0)
    rate = _Panel(1, f"Throughput per cluster (jobs per hour, over {p.bucket / 60:.0f} min)", x, (0, top))
    edges = p.edges()
    for index, rates in enumerate(throughput.values()):
        points = [*zip(edges, rates, strict=False), (edges[-1], rates[-1])]  # the last bin drawn to its end
        rate.line(_steps(points), COLOURS[index % len(COLOURS)])
    if throughput:
        rate.legend(list(throughput))
    else:
        rate.note("too short for a throughput (a minute at least)" if span < MIN_BUCKET else "no job has ended yet")

    forecasts = [f for f in p.forecasts if f.eta is not None]
    banded = [f for f in forecasts if f.low is not None and f.high is not None]
    values = [f.eta for f in forecasts] + [f.low for f in banded] + [f.high for f in banded]
    eta = _Panel(2, "Predicted end over time (Spritz's forecasts)", x, (min(values or [0]), max(values or [1])))
    if forecasts:
        if banded:
            eta.band([(f.at, f.low) for f in banded], [(f.at, f.high) for f in banded], COLOURS[0])
        eta.line([(f.at, f.eta) for f in forecasts], COLOURS[0])
    else:
        eta.note("no forecast recorded")
    eta_span = max((max(values) - min(values)) if values else 0, span)

    height = 3 * PANEL
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
        'font-family="sans-serif" font-size="11">'
        "<style>.title{font-size:13px;font-weight:bold}.frame{fill:none;stroke:#bbb}.note{fill:#666}</style>"
        f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>'
        + done.render(lambda v: f"{v:.0f}", span)
        + rate.render(lambda v: f"{v:.1f}", span)
        + eta.render(lambda v: _clock(v, eta_span) if forecasts else "", span)
        + "</svg>\n"
    )
