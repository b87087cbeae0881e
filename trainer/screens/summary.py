"""End of a session: answered, accuracy, time, missed topics, next due."""

from __future__ import annotations

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from questions.wording import plural
from trainer.core.session import SessionSummary
from trainer.widgets.keybar import KeyBar


class SummaryScreen(Screen[None]):
    BINDINGS = [Binding("enter,escape,space", "app.home", "Home", id="summary-home")]

    def __init__(self, summary: SessionSummary) -> None:
        super().__init__()
        self.summary = summary

    def compose(self) -> ComposeResult:
        s = self.summary
        yield Static(
            "Session summary" + (" (cram: schedule untouched)" if s.cram else ""),
            classes="titlebar",
        )
        minutes, seconds = divmod(int(s.seconds), 60)
        accuracy = "—" if s.accuracy is None else f"{s.accuracy:.0%}"
        rows = [
            ("Answered", f"[b]{s.answered}[/]"
             + (f"  ({plural(s.redrilled, 're-drill')})" if s.redrilled else "")),
            ("Accuracy", f"[b]{accuracy}[/]  ({s.correct} right"
             + (f", {s.overridden} of them mistyped and counted right" if s.overridden else "")
             + ")"),
            ("Time", f"[b]{minutes} min {seconds:02d} s[/]"),
        ]
        if s.missed_topics:
            missed = ", ".join(
                f"{t} ×{n}" for t, n in sorted(s.missed_topics.items(), key=lambda kv: -kv[1])
            )
            rows.append(("Missed", escape(missed)))
        for lab in s.labs:  # misses whose lab level is not passed yet
            rows.append(("Lab", escape(lab)))
        if s.left_today and not s.cram:
            rows.append(("Left today", f"[b]{s.left_today}[/]  (Enter on the home screen "
                         "resumes)"))
        if not s.cram:
            next_due = s.next_due.isoformat() if s.next_due else "nothing scheduled yet"
            rows.append(("Next due", f"[b]{next_due}[/]"))
        # Two columns: a long "Missed" or "Lab" line wraps under its value, not under the
        # labels (at 80 columns it ran back into column 1).
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, min_width=10)
        grid.add_column(overflow="fold")
        for label, value in rows:
            grid.add_row(label, Text.from_markup(value))
        with VerticalScroll():
            yield Static(Group(grid, Text("\nPress Enter to go home.")), id="summary-body")
        yield KeyBar()
