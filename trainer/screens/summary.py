"""End of a session: answered, accuracy, time, missed topics, next due."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

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
        lines = [
            f"Answered   [b]{s.answered}[/]"
            + (f"  ({s.redrilled} re-drills)" if s.redrilled else ""),
            f"Accuracy   [b]{accuracy}[/]  ({s.correct} right"
            + (f", {s.overridden} of them mistyped and counted right" if s.overridden else "")
            + ")",
            f"Time       [b]{minutes} min {seconds:02d} s[/]",
        ]
        if s.missed_topics:
            missed = ", ".join(
                f"{t} ×{n}" for t, n in sorted(s.missed_topics.items(), key=lambda kv: -kv[1])
            )
            lines.append(f"Missed     {missed}")
        for lab in s.labs:  # misses whose lab level is not passed yet
            lines.append(f"Lab        {escape(lab)}")
        if s.left_today and not s.cram:
            lines.append(f"Left today [b]{s.left_today}[/]  (Enter on the home screen resumes)")
        if not s.cram:
            next_due = s.next_due.isoformat() if s.next_due else "nothing scheduled yet"
            lines.append(f"Next due   [b]{next_due}[/]")
        lines.append("\nPress Enter to go home.")
        with VerticalScroll():
            yield Static("\n".join(lines), id="summary-body")
        yield KeyBar()
