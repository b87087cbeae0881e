"""The mock round (i on Today): one clock, one part at a time, the report at the end.

Everything is decided in `trainer.core.mock` (the same calls as `dojo mock`); this screen types
answers into it and paints what it says. The round is saved after every step, so Esc (or closing
the app) leaves it open, and i on Today comes back to it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.markdown import Markdown as RichMarkdown
from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Input, Static

from trainer.screens.base import DojoScreen
from trainer.widgets.keybar import KeyBar

if TYPE_CHECKING:
    from trainer.core.mock import MockRound, PartFeedback
    from trainer.core.services import Services


class MockScreen(DojoScreen):
    BINDINGS = [
        Binding("escape", "leave", "Leave (resumable)", id="mock-leave"),
        Binding("ctrl+g", "grade", "Grade the lab", id="mock-grade", priority=True),
        Binding("ctrl+e", "edit", "Edit file", id="mock-edit", priority=True),
        Binding("ctrl+k", "skip", "Skip part", id="mock-skip", priority=True),
    ]

    def __init__(self, mock: MockRound) -> None:
        super().__init__()
        self.mock = mock
        self.grading = False

    def compose(self) -> ComposeResult:
        yield Static("", id="mock-title", classes="titlebar")
        with VerticalScroll(id="mock-body"):
            yield Static("", id="mock-head")
            # The last part's result above what comes next: the lab's verdict stays in view
            # above the round's report (it was below the fold at 80x24).
            yield Static("", id="mock-feedback")
            yield Static("", id="mock-prompt")
        yield Input(id="mock-input")
        yield KeyBar()

    def on_mount(self) -> None:
        self._tick()
        self.set_interval(1.0, self._tick)
        self._paint()

    def _tick(self) -> None:
        done = " · finished" if self.mock.current is None else ""
        self.query_one("#mock-title", Static).update(
            f"Mock round #{self.mock.round_id} · {self.mock.clock(time.time())}{done}")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        item = self.mock.current
        if action in ("grade", "edit"):
            return item is not None and item.kind == "lab" and not self.grading
        if action == "skip":
            return item is not None and not self.grading
        return True

    @property
    def _services(self) -> Services:
        assert self.dojo.services is not None
        return self.dojo.services

    def _paint(self) -> None:
        from trainer.core.mock import begin

        view = begin(self.mock, self._services)
        field = self.query_one("#mock-input", Input)
        self.refresh_bindings()
        if view is None:
            self._report()
            field.display = False
            return
        self.query_one("#mock-head", Static).update(f"[b]{escape(view.title)}[/]")
        body = view.text
        if view.path:
            body += (f"\n\nYour file: **{view.path}**\n\nctrl+e opens it in your editor; "
                     "ctrl+g grades it, as often as you need: a pass ends this part, "
                     "and so does the round's clock.")
        self.query_one("#mock-prompt", Static).update(
            RichMarkdown(body, code_theme="ansi_dark", hyperlinks=False))
        field.display = not view.path
        field.value = ""
        field.placeholder = view.how
        if field.display:
            field.focus()

    def _report(self) -> None:
        from trainer.core.mock import report

        rep = report(self.mock, self._services)
        whole = int(rep.elapsed_s)
        self.query_one("#mock-head", Static).update(
            f"[b]Round #{rep.round_id}: {rep.score:.0%}[/] in {whole // 60}:{whole % 60:02d} "
            f"of {rep.minutes}:00 · Esc goes home")
        lines = []
        for p in rep.parts:
            secs = int(p.seconds)
            lines.append(f"{escape(p.name):<14} {p.score:>4.0%}  {secs // 60}:{secs % 60:02d}")
        if rep.mistakes:
            lines += ["", "[b]Mistakes[/]", *(f"- {escape(m)}" for m in rep.mistakes)]
        if rep.study_next:
            lines += ["", "[b]Study next[/]", *(f"- {escape(s)}" for s in rep.study_next)]
        self.query_one("#mock-prompt", Static).update("\n".join(lines))

    def _show_feedback(self, feedback: PartFeedback) -> None:
        text = "\n".join(escape(line) for line in feedback.lines)
        if text and feedback.item_done:
            text = f"Last answer: {text}"
        colour = "yellow" if feedback.reask else "dim"
        self.query_one("#mock-feedback", Static).update(f"[{colour}]{text}[/]" if text else "")
        if not feedback.reask:
            self._paint()

    @on(Input.Submitted, "#mock-input")
    def _submitted(self, event: Input.Submitted) -> None:
        from trainer.core.mock import answer

        if not event.value.strip():
            return
        self._show_feedback(answer(self.mock, event.value, self._services))

    def action_skip(self) -> None:
        from trainer.core.mock import skip

        self._show_feedback(skip(self.mock, self._services))

    def action_edit(self) -> None:
        from trainer.core.lab import Lab

        item = self.mock.current
        if item is None or item.kind != "lab":
            return
        path = Lab(self._services.store).solution_file(item.ref["exercise"])
        try:
            self.dojo.open_editor(self.dojo, path)
        except Exception as exc:  # no such editor ("could not start the editor `code`")
            text = str(exc)
            self.notify(text[:1].upper() + text[1:], severity="error", timeout=10)

    def action_grade(self) -> None:
        self.grading = True
        self.refresh_bindings()
        self.query_one("#mock-feedback", Static).update("[dim]Grading…[/]")
        self._grade()

    @work(thread=True, exclusive=True, group="mock-grade")
    def _grade(self) -> None:
        from trainer.core.mock import PartFeedback, grade_lab

        try:
            feedback = grade_lab(self.mock, self._services)
        except Exception as exc:  # the grader could not run: say so, the part stays open
            feedback = PartFeedback([f"Grading failed: {exc}"], reask=True)
        self.app.call_from_thread(self._graded, feedback)

    def _graded(self, feedback: PartFeedback) -> None:
        self.grading = False
        self._show_feedback(feedback)

    def action_leave(self) -> None:
        self._stop_clock()
        if self.mock.current is not None:
            self.notify("The round is saved: i on Today resumes it.")
        self.dojo.action_home()

    def on_unmount(self) -> None:
        self._stop_clock()  # the app closed mid-round: the time until it reopens is not counted

    def _stop_clock(self) -> None:
        from trainer.core.mock import leave

        if self.mock.last_s is not None and self.dojo.services is not None:
            leave(self.mock, self.dojo.services)
