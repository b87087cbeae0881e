"""Whether every widget's text fits its region, and every region its container: the check
the size tests run on each screen and modal. A text taller than its widget (a two-line key bar in
a one-line region) or wider than it (a line that does not wrap) loses its end; a widget wider
than the container that shows it is cut at the container's edge ("(oldest → lat")."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from trainer.widgets.charts import BarChart, Heatmap

TEXT_WIDGETS = (Static, BarChart, Heatmap)


def _name(widget: Widget) -> str:
    ident = f"#{widget.id}" if widget.id else ""
    classes = "".join(f".{c}" for c in sorted(widget.classes))
    return f"{type(widget).__name__}{ident}{classes}"


def _plain(widget: Widget) -> str:
    rendered = widget.render()
    return str(getattr(rendered, "plain", rendered))


def _text_problems(widget: Widget) -> list[str]:
    """The widget's own text against its content region."""
    size = widget.content_size
    if size.width <= 0 or size.height <= 0:
        return []
    viewport = widget.app.size
    problems = []
    needed = widget.get_content_height(size, viewport, size.width)
    scrolls = widget.styles.overflow_y in ("auto", "scroll")  # the rest is a scroll away
    if needed > size.height and not scrolls:
        problems.append(f"{_name(widget)}: text of {needed} lines in {size.height} "
                        f"({_plain(widget)[:60]!r})")
    wraps = widget.styles.text_wrap != "nowrap" and isinstance(widget, Static)
    if not wraps:
        wide = max((Text(line).cell_len for line in _plain(widget).splitlines()), default=0)
        if wide > size.width:
            problems.append(f"{_name(widget)}: a line of {wide} cells in {size.width} "
                            f"({_plain(widget)[:60]!r})")
    return problems


def overflows(screen: Screen[Any]) -> list[str]:
    """Every widget whose text is taller or wider than its region, or whose region runs past
    the container that shows it (left or right): an empty list when everything fits."""
    problems: list[str] = []
    placed = screen._compositor.full_map  # widget -> its region and its container's clip
    for widget, geometry in placed.items():
        if widget is screen or not widget.display or not widget.visible:
            continue
        region, clip = geometry.region, geometry.clip
        # Left and right only: below the fold is fine (it scrolls into view), but there the
        # clip has no height and still its container's columns.
        if region.width and clip.width and (region.x < clip.x or region.right > clip.right):
            problems.append(f"{_name(widget)}: columns {region.x}-{region.right} shown in "
                            f"{clip.x}-{clip.right}")
        if isinstance(widget, TEXT_WIDGETS):
            problems += _text_problems(widget)
    return problems
