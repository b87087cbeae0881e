"""The Textual app shell; the screens arrive with the trainer issue."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Static


class DojoApp(App[None]):
    """Serving Dojo's TUI."""

    TITLE = "Serving Dojo"
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Serving Dojo — the review screens are being built. Press q to quit.")
        yield Footer()


def run_app() -> None:
    DojoApp().run()
