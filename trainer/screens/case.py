"""A case study in the review screen: the steps answered one at a time below the scenario.

The review screen shows the scenario (`instance.prompt`) and, when the last step is done, the
card's explanation and grade bar as for any card; this panel asks each step, shows its verdict,
diagnosis, accepted range, revealed value and explanation, and moves on with Enter. The rules
live in `Session.case` / `Session.next_step` (headless, `trainer.core.case`).
"""

from __future__ import annotations

from rich.markdown import Markdown as RichMarkdown
from rich.markup import escape
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Static

from questions.answers import Reask
from questions.wording import plural
from trainer.core.case import StepVerdict
from trainer.core.session import Feedback, Session
from trainer.screens.base import DojoScreen


class CasePanel(Vertical, can_focus=True):
    """Steps of the current case card; focused (Enter = next step) while a verdict shows."""

    DEFAULT_CSS = """
    CasePanel { height: auto; }
    CasePanel #case-done { height: auto; color: $text-muted; }
    CasePanel #case-answer-row { height: auto; }
    CasePanel #case-answer { width: 1fr; }
    CasePanel #case-unit { width: auto; padding: 1 1 0 1; }
    CasePanel #case-verdict { height: auto; margin-top: 1; }
    CasePanel #case-next { color: $text-muted; }
    """
    BINDINGS = [Binding("enter", "next", "Next step", id="case-next-step")]

    class Finished(Message):
        """The last step is done: the card's feedback, ready to be graded."""

        def __init__(self, feedback: Feedback) -> None:
            super().__init__()
            self.feedback = feedback

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session: Session | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="case-done")
        yield Static("", id="case-step")
        with Horizontal(id="case-answer-row"):
            yield Input(placeholder="your answer", id="case-answer")
            yield Static("", id="case-unit")
        yield Static("", id="case-reask")
        with Vertical(id="case-verdict"):
            yield Static("", id="case-step-verdict")
            yield Static("", id="case-step-explanation")
            yield Static("", id="case-next")

    # -- painting ------------------------------------------------------------------------------

    def start(self, session: Session) -> None:
        """Show the current card's case from where it stands (a fresh card: step 1)."""
        self.session = session
        self.show_step()

    def show_step(self) -> None:
        case = self.session.case if self.session else None
        if case is None:
            return
        step = case.step
        self.query_one("#case-done", Static).update("\n".join(
            _done_line(v, case.total) for v in case.verdicts[: case.index]))
        self.query_one("#case-reask", Static).update("")
        if step is None:  # every step done: the screen shows the card's feedback
            self.query_one("#case-step", Static).display = False
            self.query_one("#case-answer-row").display = False
            self.query_one("#case-verdict").display = False
            return
        self.query_one("#case-step", Static).display = True
        self.query_one("#case-step", Static).update(RichMarkdown(
            f"**Step {case.index + 1} of {case.total}.** {step.prompt}", hyperlinks=False))
        if case.verdict is not None:
            self.show_verdict(case.verdict)
            return
        if case.index:  # step 1 comes with the card
            self._changed(f"step {case.index + 1}")
        self.query_one("#case-verdict").display = False
        self.query_one("#case-answer-row").display = True
        answer = self.query_one("#case-answer", Input)
        answer.value = ""
        answer.disabled = False
        unit = step.question.unit
        answer.placeholder = f"step {case.index + 1}: your answer in {unit}" if unit else (
            f"step {case.index + 1}: your answer (a number)")
        self.query_one("#case-unit", Static).update(escape(unit))
        answer.focus()

    def show_verdict(self, verdict: StepVerdict) -> None:
        case = self.session.case if self.session else None
        assert case is not None
        self._changed("the step's verdict")
        self.query_one("#case-answer", Input).disabled = True
        lines = []
        if verdict.diagnosis and not verdict.correct:  # the named mistake is the lesson
            lines.append(f"[b yellow]{escape(verdict.diagnosis)}[/]")
        if verdict.overridden:
            mark = "[b green]✓ Counted right[/] [dim](you mistyped)[/]"
        else:
            mark = "[b green]✓ Right[/]" if verdict.correct else "[b red]✗ Not quite[/]"
        lines.append(f"{mark}   answer [b]{escape(verdict.revealed)}[/]   "
                     f"you: {escape(verdict.given)}")
        if verdict.accepted:
            lines.append(f"[dim]{escape(verdict.accepted)}[/]")
        if verdict.hint:
            lines.append(f"[yellow]{escape(verdict.hint)}[/]")
        self.query_one("#case-step-verdict", Static).update("\n".join(lines))
        self.query_one("#case-step-explanation", Static).update(
            RichMarkdown(verdict.explanation, hyperlinks=False))
        last = case.index + 1 >= case.total
        keys = "[b]Enter[/] " + ("finish the case" if last else f"step {case.index + 2}")
        if case.can_override:
            keys += "   [b]t[/] I mistyped — count it right"
        self.query_one("#case-next", Static).update(keys)
        self.query_one("#case-verdict").display = True
        self.focus()
        self.call_after_refresh(self._scroll_to_verdict)

    def _changed(self, name: str) -> None:
        """Keys typed before this is painted are refused (`DojoScreen.view_changed`)."""
        if isinstance(self.screen, DojoScreen):
            self.screen.view_changed(name)

    def _scroll_to_verdict(self, tries: int = 20, again: bool = True) -> None:
        """Bring the step's verdict into view, its answer line included. Waits until the
        verdict is laid out, and scrolls once more a moment later: a region read before the
        layout settles is stale (the last step's verdict), and scrolling to it left the answer
        below the fold at 60x20 in a real terminal."""
        verdict = self.query_one("#case-step-verdict")
        if verdict.region.height == 0 and tries:
            self.set_timer(0.02, lambda: self._scroll_to_verdict(tries - 1, again))
            return
        self.screen.scroll_to_widget(self.query_one("#case-verdict"), animate=False)
        self.screen.scroll_to_widget(verdict, animate=False)  # the verdict lines whole
        if again:
            self.set_timer(0.1, lambda: self._scroll_to_verdict(0, again=False))

    # -- answering -----------------------------------------------------------------------------

    @on(Input.Submitted, "#case-answer")
    def _typed(self, event: Input.Submitted) -> None:
        event.stop()
        case = self.session.case if self.session else None
        if case is None or case.verdict is not None or not event.value.strip():
            return
        try:
            verdict = case.submit(event.value)
        except Reask as exc:  # not graded: the same step is asked again
            self.query_one("#case-reask", Static).update(f"[yellow]{escape(str(exc))}[/]")
            return
        self.query_one("#case-reask", Static).update("")
        self.show_verdict(verdict)
        self.screen.refresh_bindings()

    def override(self) -> None:
        """The screen's `t`: count the wrong verdict of the step showing right."""
        case = self.session.case if self.session else None
        if case is not None and case.can_override:
            self.show_verdict(case.override())
            self.screen.refresh_bindings()

    def action_next(self) -> None:
        case = self.session.case if self.session else None
        if self.session is None or case is None or case.verdict is None:
            return
        feedback = self.session.next_step()
        self.show_step()
        self.screen.refresh_bindings()
        if feedback is not None:
            self.post_message(self.Finished(feedback))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next":
            case = self.session.case if self.session else None
            return case is not None and case.verdict is not None
        return True


def _done_line(verdict: StepVerdict, total: int) -> str:
    mark = "[green]✓[/]" if verdict.correct else "[red]✗[/]"
    return (f"{mark} step {verdict.index + 1}/{total}: [b]{escape(verdict.revealed)}[/]"
            f" (you: {escape(verdict.given)})")


def case_summary(session: Session) -> str:
    """The case's verdict line under its last step: steps right and the suggested grade."""
    case = session.case
    feedback = session.feedback
    if case is None or feedback is None or feedback.suggested is None:
        return ""
    right = sum(case.rights)
    return (f"[b]{right} of {plural(case.total, 'step')} right[/]: suggested grade "
            f"[b]{feedback.suggested}[/] (change it with 0-5)")
