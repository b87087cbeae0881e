"""A one-line key bar: the active screen's shown bindings as text.

Textual's Footer rebuilds a widget per key on every bindings change (each focus move, each card),
which cost ~100 ms a card on this machine; this renders one Static instead.
"""

from __future__ import annotations

from rich.markup import escape
from textual.screen import Screen
from textual.widgets import Static


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._changed)
        self._changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _changed(self, screen: Screen[object]) -> None:
        parts: list[str] = []
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            if not binding.show or not binding.description or binding.action in seen:
                continue
            seen.add(binding.action)
            key = escape(self.app.get_key_display(binding))
            label = escape(binding.description)
            parts.append(f"[b]{key}[/] {label}" if active.enabled else f"[dim]{key} {label}[/]")
        parts.append("[b]^p[/] palette")
        text = "  ".join(parts)
        if text != getattr(self, "_last", None):
            self._last = text
            self.update(text)
