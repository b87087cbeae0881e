"""Small modal screens: the concept note, related questions, one question read, flag-for-edit."""

from __future__ import annotations

from collections.abc import Sequence
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
        self.rows = rows  # (id, one plain line of a draw's prompt: `related_rows`)
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
        from trainer.app import DojoApp

        app = self.app
        studied = app.studied(question_id) if isinstance(app, DojoApp) else False
        self.app.push_screen(QuestionScreen(question, studied=studied))


def related_rows(question: Question, bank: Bank) -> list[tuple[str, str]]:
    """The related list's rows: (id, one plain line of a draw's prompt), never the raw
    template (`{layers}`) or Markdown (`**Kimi-K2**`)."""
    from trainer.core.text import plain_line

    rows = []
    for qid in getattr(question, "related", ()) or ():
        other = bank.get(qid)
        rows.append((qid, "(not in the bank)" if other is None
                     else plain_line(str(other.draw(0).prompt))))
    return rows


class QuestionScreen(ModalScreen[None]):
    """One question read, not graded (from Related, and the command palette's "open question
    by id"). A card already studied shows a draw's answer and explanation; one not studied yet
    keeps them hidden (reading the answer first would spoil its first review) and offers `p`:
    practise it now, on fresh numbers, not graded into the schedule. Esc goes back."""

    BINDINGS = [
        Binding("escape,q", "dismiss", "Back"),
        Binding("p", "practise", "Practise now", tooltip="This question now, fresh numbers, "
                "not graded into your schedule"),
    ]

    def __init__(self, question: Question, *, studied: bool = True) -> None:
        super().__init__()
        self.question = question
        self.studied = studied

    def compose(self) -> ComposeResult:
        from questions.answers import choice_label

        q = self.question
        inst = q.draw(0)
        choices = "\n".join(f"- {choice_label(i, c)}" for i, c in enumerate(inst.choices))
        if self.studied:
            if inst.correct_index is not None:
                answer = choice_label(inst.correct_index, inst.choices[inst.correct_index])
            else:
                unit = q.unit
                answer = f"{inst.answer:g} {unit}".strip() if inst.answer is not None else "—"
            parts: tuple[str, ...] = (inst.prompt, choices, f"**Answer:** {answer}",
                                      inst.explanation)
        else:
            parts = (inst.prompt, choices, "*Not studied yet: its answer stays hidden until you "
                     "have answered it once. Press **p** to practise it now (fresh numbers, not "
                     "graded into your schedule).*")
        body = "\n\n".join(x for x in parts if x)
        with Vertical(classes="modal"):
            yield Static(f"[b]{escape(q.id)}[/]  [dim](p practise · Esc back)[/]",
                         classes="modal-title")
            with VerticalScroll():
                yield Markdown(body, id="question-body")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_practise(self) -> None:
        from trainer.app import DojoApp

        app = self.app
        question_id = self.question.id
        self.dismiss()
        if isinstance(app, DojoApp):
            app.practise(question_id)


class FlagScreen(ModalScreen[str | None]):
    """Ask for a short note on what is wrong with the question."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question_id: str, existing: Sequence[str] = ()) -> None:
        super().__init__()
        self.question_id = question_id
        self.existing = list(existing)  # its open flags' notes: said, not added twice

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal small"):
            yield Static(f"[b]Flag {self.question_id} for editing[/]", classes="modal-title")
            if self.existing:
                yield Static("[dim]Already flagged: "
                             + "; ".join(escape(n) for n in self.existing) + "[/]",
                             id="flag-existing")
            yield Input(placeholder="what is wrong? (Enter to flag, Esc to cancel)", id="flag-note")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or "flagged")

    def action_cancel(self) -> None:
        self.dismiss(None)
