"""Set the plan to the interview day from the app (Today's `p`, the palette), as `dojo plan`."""

from __future__ import annotations

import datetime as dt

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from trainer.core.plan import parse_day

DEFAULT_MINUTES = 30


def parse_plan(text: str) -> tuple[dt.date, int] | None:
    """"2026-12-21 45" -> (date, minutes); "2026-12-21" takes 30 minutes; "clear" -> None.
    Raises ValueError saying what is wrong."""
    words = text.split()
    if words == ["clear"]:
        return None
    if not 1 <= len(words) <= 2:
        raise ValueError("type a date YYYY-MM-DD and, optionally, minutes a day")
    day = parse_day(words[0])  # its ValueError names the bad part
    minutes = DEFAULT_MINUTES
    if len(words) == 2:
        if not words[1].isdecimal() or not 1 <= int(words[1]) <= 600:
            raise ValueError(f"minutes a day must be a whole number 1-600, got {words[1]!r}")
        minutes = int(words[1])
    return day, minutes


class PlanScreen(ModalScreen[str | None]):
    """Ask for the interview date and the minutes a day (or "clear")."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: str = "") -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal small"):
            yield Static("[b]Plan to the interview day[/]", classes="modal-title")
            yield Static("Date and minutes a day, e.g. 2026-12-21 45; clear removes the plan.")
            yield Input(value=self.current, placeholder="YYYY-MM-DD [minutes]", id="plan-input")
            yield Static("", id="plan-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            parse_plan(event.value)
        except ValueError as exc:
            self.query_one("#plan-error", Static).update(f"[red]{exc}[/]")
            return
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
