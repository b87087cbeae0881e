"""A key bar of one line (two where one is too narrow): the active screen's shown bindings.

Textual's Footer rebuilds a widget per key on every bindings change (each focus move, each card),
which cost ~100 ms a card on this machine; this renders one Static instead. A screen with more
keys than one line holds wraps to a second row (at 60 columns Review's `^f Flag` and `esc End`
were hidden behind "…"); past two rows the last keys give way to "…" and F1 lists them all.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text
from textual.screen import Screen
from textual.widgets import Static


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: auto;
        background: $footer-background;
        color: $footer-foreground;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, rows: int = 2) -> None:
        super().__init__()
        self.rows = max(1, rows)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._changed)
        self._changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def on_resize(self) -> None:
        self._changed(self.screen)

    def _changed(self, screen: Screen[object]) -> None:
        parts: list[str] = []
        always: list[str] = []  # F1 and ^p: the way to every other key, never cut
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.show or not binding.description or binding.action in seen:
                continue
            seen.add(binding.action)
            key = escape(self.app.get_key_display(binding))
            label = escape(binding.description)
            part = f"[b]{key}[/] {label}" if active.enabled else f"[dim]{key} {label}[/]"
            (always if binding.action in ("help", "app.help") else parts).append(part)
        always.append("[b]^p[/] palette")
        wanted = (tuple(parts), tuple(always), self.size.width, self.rows)
        if wanted == getattr(self, "_wanted", None):
            return  # every card asks again with the same keys: fitting them costs ~5 ms
        self._wanted = wanted
        text = fit(parts, always, self.size.width, self.rows)  # content width, no padding
        if text != getattr(self, "_last", None):
            self._last = text
            # The height is set, not left to `auto`: an update made while the screen resizes
            # kept the one-line region of the first layout, so a second row was never seen.
            self.styles.height = text.count("\n") + 1
            self.update(text)


def fit(parts: list[str], always: list[str], width: int, rows: int = 1) -> str:
    """The parts that fit in `rows` lines of `width` cells (a part is never split across
    lines), then an ellipsis if some did not, then `always` at the end of the last line (Help
    and the palette stay visible at any width, so a narrow terminal still leads to every key)."""
    sep = "  "
    tail = sep.join(always)
    full = sep.join([*parts, tail])
    if width <= 0 or Text.from_markup(full).cell_len <= width:
        return full

    def cells(line: list[str]) -> int:
        return Text.from_markup(sep.join(line)).cell_len

    lines: list[str] = []
    rest = list(parts)
    for _ in range(rows - 1):  # the lines above the last: as many parts as each holds
        if cells([*rest, tail]) <= width:
            break
        line: list[str] = []
        while rest and cells([*line, rest[0]]) <= width:
            line.append(rest.pop(0))
        if not line:
            break
        lines.append(sep.join(line))
    if cells([*rest, tail]) <= width:
        return "\n".join([*lines, sep.join([*rest, tail])])
    room = width - Text.from_markup(tail).cell_len - len(sep) - 1  # 1 for the ellipsis
    kept: list[str] = []
    for part in rest:
        if cells([*kept, part]) > room:
            break
        kept.append(part)
    return "\n".join([*lines, sep.join([*kept, "…" + tail] if kept else ["…" + tail])])
