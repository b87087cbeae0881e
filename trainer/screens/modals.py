"""Small modal screens: the concept note, related questions, one question read, flag-for-edit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Markdown, OptionList, Static
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from questions.bank import Bank
    from questions.model import Question


class NoteScreen(ModalScreen[None]):
    """A topic's concept note (Markdown), scrollable; Escape closes; `m` opens the topic's sim
    when it has one, so the note's worked example can be replayed with live dials."""

    BINDINGS = [
        Binding("escape,q,n", "dismiss", "Close"),
        Binding("m", "sim", "Sim", show=False),
    ]

    def __init__(self, title: str, markdown: str, sim: str | None = None) -> None:
        super().__init__()
        self.note_title = title
        self.markdown = markdown
        self.sim = sim

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal"):
            sim = f" · m: the {escape(self.sim)} sim" if self.sim else ""
            yield Static(f"[b]{escape(self.note_title)}[/]  [dim](Esc to close{sim})[/]",
                         classes="modal-title")
            with VerticalScroll():
                yield Markdown(self.markdown)

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_sim(self) -> None:
        if self.sim:
            from trainer.screens.sim import SimScreen

            self.dismiss()
            self.app.push_screen(SimScreen(self.sim))


class RelatedScreen(ModalScreen[None]):
    """The question's related questions, each one key away: `1`-`9` (or Enter on the
    highlighted one) opens it with its answer and explanation; Esc comes back here, then to
    the card."""

    BINDINGS = [
        Binding("escape,q,r", "dismiss", "Close"),
        *[Binding(str(n), f"open({n - 1})", show=False) for n in range(1, 10)],
    ]

    def __init__(self, rows: list[tuple[str, str]], bank: Bank | None = None) -> None:
        super().__init__()
        self.rows = rows
        self.bank = bank

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal"):
            yield Static("[b]Related questions[/]  [dim](1-9 or Enter opens one · Esc to "
                         "close)[/]", classes="modal-title")
            if not self.rows:
                yield Static("None.")
                return
            yield OptionList(
                *[Option(f"[b]{n}[/] {escape(qid)}  {escape(text)}", id=qid)
                  for n, (qid, text) in enumerate(self.rows, 1)],
                id="related-list",
            )

    def on_mount(self) -> None:
        if self.rows:
            self.query_one(OptionList).focus()

    def action_open(self, index: int) -> None:
        if 0 <= index < len(self.rows):
            self._open(self.rows[index][0])

    @on(OptionList.OptionSelected, "#related-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self._open(event.option.id)

    def _open(self, question_id: str) -> None:
        question = self.bank.get(question_id) if self.bank is not None else None
        if question is None:
            self.notify(f"{question_id} is not in the question bank.", severity="warning")
            return
        self.app.push_screen(QuestionScreen(question))


class QuestionScreen(ModalScreen[None]):
    """One question read, not graded: a draw's prompt, choices, answer and explanation (from
    Related, and the command palette's "open question by id"). Esc goes back."""

    BINDINGS = [Binding("escape,q", "dismiss", "Back")]

    def __init__(self, question: Question) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        from questions.answers import choice_label

        q = self.question
        inst = q.draw(0)
        if inst.correct_index is not None:
            answer = choice_label(inst.correct_index, inst.choices[inst.correct_index])
        else:
            unit = q.unit
            answer = f"{inst.answer:g} {unit}".strip() if inst.answer is not None else "—"
        choices = "\n".join(f"- {choice_label(i, c)}" for i, c in enumerate(inst.choices))
        body = "\n\n".join(x for x in (inst.prompt, choices, f"**Answer:** {answer}",
                                        inst.explanation) if x)
        with Vertical(classes="modal"):
            yield Static(f"[b]{escape(q.id)}[/]  [dim](read only · Esc to go back)[/]",
                         classes="modal-title")
            with VerticalScroll():
                yield Markdown(body, id="question-body")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()


class FlagScreen(ModalScreen[str | None]):
    """Ask for a short note on what is wrong with the question."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question_id: str) -> None:
        super().__init__()
        self.question_id = question_id

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal small"):
            yield Static(f"[b]Flag {self.question_id} for editing[/]", classes="modal-title")
            yield Input(placeholder="what is wrong? (Enter to flag, Esc to cancel)", id="flag-note")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or "flagged")

    def action_cancel(self) -> None:
        self.dismiss(None)
