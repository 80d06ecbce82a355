"""Charts as geometry for server-rendered SVG: the templates draw what these compute.

No JavaScript and nothing from the network: each chart is a small dataclass of coordinates and
labels, and ``templates/charts.html`` turns it into SVG (Jinja2 escapes every label).
"""

from __future__ import annotations

from dataclasses import dataclass, field

WIDTH = 640
LABEL_WIDTH = 130
ROW = 22
PLOT_HEIGHT = 160
MARGIN = 28
TICK_SPACING = 80  # x-axis labels closer than this would overlap


@dataclass
class Bar:
    """One bar: where it is, how big, and what it says."""

    x: float
    y: float
    width: float
    height: float
    label: str
    value: str


@dataclass
class BarChart:
    """Horizontal bars (time per stage) or columns (a histogram)."""

    width: int
    height: int
    bars: list[Bar]
    axis: list[tuple[float, str]] = field(default_factory=list)  # (x or y, tick label)
    title: str = ""


@dataclass
class Point:
    """One run on a line chart: where it is, and the build and date it scored."""

    x: float
    y: float
    build: str
    date: str
    value: str


@dataclass
class LineChart:
    """A line through points (a headline figure across builds), on a 0..1 scale; ``ticks`` are
    the points labelled under the x axis (every one when they fit, else the first and last)."""

    width: int
    height: int
    points: list[Point]
    axis: list[tuple[float, str]]
    title: str = ""
    ticks: list[Point] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The SVG polyline's ``points`` attribute."""
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


def stage_bars(seconds: dict[str, float], title: str = "seconds per stage") -> BarChart:
    """Time per build stage as horizontal bars, in stage order."""
    longest = max(seconds.values(), default=0.0) or 1.0
    span = WIDTH - LABEL_WIDTH - 70
    bars = [
        Bar(
            LABEL_WIDTH,
            i * ROW + 4,
            max(1.0, span * value / longest),
            ROW - 8,
            name,
            f"{value:.1f} s",
        )
        for i, (name, value) in enumerate(seconds.items())
    ]
    return BarChart(WIDTH, len(bars) * ROW + 8, bars, title=title)


def histogram(
    bins: list[tuple[int, int, int]], title: str = "chunks by length (tokens)"
) -> BarChart:
    """Columns of a histogram, with the tokens of every other bin's lower edge below."""
    if not bins:
        return BarChart(WIDTH, 40, [], title=title)
    most = max(count for _, _, count in bins) or 1
    step = (WIDTH - 2 * MARGIN) / len(bins)
    bars, axis = [], []
    for i, (low, high, count) in enumerate(bins):
        height = PLOT_HEIGHT * count / most
        x = MARGIN + i * step
        bars.append(
            Bar(x + 1, MARGIN + PLOT_HEIGHT - height, step - 2, height, f"{low}–{high}", str(count))
        )
        if i % 2 == 0:
            axis.append((x, str(low)))
    return BarChart(WIDTH, PLOT_HEIGHT + 2 * MARGIN + 10, bars, axis, title)


def trend(points: list[tuple[str, str, float]], title: str) -> LineChart:
    """A figure between 0 and 1 across runs, oldest left: ``(build, date, value)`` each."""
    span = WIDTH - 2 * MARGIN - 60
    step = span / max(1, len(points) - 1)
    placed = [
        Point(
            MARGIN + 40 + i * step, MARGIN + PLOT_HEIGHT * (1 - value), build, date, f"{value:.3f}"
        )
        for i, (build, date, value) in enumerate(points)
    ]
    ticks = placed if step >= TICK_SPACING or len(placed) == 1 else [placed[0], placed[-1]]
    axis = [(MARGIN + PLOT_HEIGHT * (1 - v), f"{v:.1f}") for v in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)]
    return LineChart(WIDTH, PLOT_HEIGHT + 2 * MARGIN + 30, placed, axis, title, ticks)
