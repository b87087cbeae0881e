"""Text charts sized for an 80-column terminal: a review heatmap and a vertical bar chart."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

_SHADES = ("grey23", "dark_green", "green4", "green3", "bright_green")
_BARS = " ▁▂▃▄▅▆▇█"


def heatmap_text(per_day: dict[dt.date, int], today: dt.date, weeks: int = 12) -> Text:
    """GitHub-style grid: one column per week (oldest left), one row per weekday."""
    start = today - dt.timedelta(days=today.weekday() + 7 * (weeks - 1))
    peak = max(per_day.values(), default=0)
    text = Text()
    for weekday, name in enumerate(("Mon", "", "Wed", "", "Fri", "", "Sun")):
        text.append(f"{name:<4}", style="dim")
        for week in range(weeks):
            day = start + dt.timedelta(days=7 * week + weekday)
            if day > today:
                text.append("  ")
                continue
            count = per_day.get(day, 0)
            level = 0 if count == 0 or peak == 0 else 1 + min(3, (count * 4 - 1) // peak)
            text.append("■ ", style=_SHADES[level])
        text.append("\n")
    text.append("    less ", style="dim")
    for shade in _SHADES:
        text.append("■", style=shade)
    text.append(" more", style="dim")
    return text


def _count(v: int) -> str:
    return str(v) if v < 1000 else f"{v // 1000}k"


def bar_columns(values: Sequence[int]) -> int:
    """Cells per bar: the widest count plus one blank, so "197" and "173" never run together."""
    return max(3, 1 + max((len(_count(v)) for v in values), default=1))


def bars_text(values: Sequence[int], labels: Sequence[str] = (), height: int = 5,
              width: int = 0) -> Text:
    """A vertical bar chart with the count above each bar. Wider than `width` cells (0: no
    limit), the bars continue in a second block below, so no day is cut at the edge."""
    col = bar_columns(values)
    per_block = len(values) if width <= 0 else max(1, width // col)
    peak = max(values, default=0)
    text = Text()
    for start in range(0, max(1, len(values)), per_block):
        if start:
            text.append("\n")
        chunk = values[start:start + per_block]
        eighths = [0 if peak == 0 else round(v * height * 8 / peak) for v in chunk]
        text.append("".join(f"{_count(v):>{col}}" for v in chunk) + "\n", style="dim")
        for row in range(height - 1, -1, -1):
            line = ""
            for e in eighths:
                fill = max(0, min(8, e - row * 8))
                line += " " * (col - 1) + (_BARS[fill] if fill else " ")
            text.append(line + "\n", style="cyan")
        if labels:
            text.append("".join(f"{lab:>{col}}" for lab in labels[start:start + per_block])
                        + "\n", style="dim")
    text.rstrip()
    return text


class Heatmap(Widget):
    """Reviews per day over the last weeks."""

    DEFAULT_CSS = "Heatmap { width: auto; height: auto; }"

    def __init__(self, weeks: int = 12, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.weeks = weeks
        self.per_day: dict[dt.date, int] = {}
        self.today = dt.date.today()

    def update(self, per_day: dict[dt.date, int], today: dt.date) -> None:
        self.per_day, self.today = per_day, today
        self.refresh(layout=True)

    def render(self) -> Text:
        return heatmap_text(self.per_day, self.today, self.weeks)

    def get_content_width(self, container: object, viewport: object) -> int:
        return 4 + 2 * self.weeks

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return 8


class BarChart(Widget):
    """A small vertical bar chart (due forecast, reviews per day, distributions); as wide as
    its bars, and in blocks one under another where the container is narrower."""

    DEFAULT_CSS = "BarChart { width: auto; height: auto; max-width: 100%; }"

    def __init__(self, height: int = 5, bars: int = 0, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.bar_height = height
        self.values: list[int] = [0] * bars  # placeholder width until the data arrives
        self.labels: list[str] = []

    def update(self, values: Sequence[int], labels: Sequence[str] = ()) -> None:
        self.values, self.labels = list(values), list(labels)
        self.refresh(layout=True)

    def render(self) -> Text:
        return bars_text(self.values, self.labels, self.bar_height, self.content_size.width)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return max(3, bar_columns(self.values) * len(self.values))

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        per_block = max(1, width // bar_columns(self.values))
        blocks = max(1, -(-len(self.values) // per_block))
        block = self.bar_height + 1 + (1 if self.labels else 0)
        return blocks * block + blocks - 1
