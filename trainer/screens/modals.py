"""Small modal screens: the concept note, related questions, flag-for-edit."""

from __future__ import annotations

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Markdown, Static


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
    """The question's related questions: id and the start of the prompt."""

    BINDINGS = [Binding("escape,q,r", "dismiss", "Close")]

    def __init__(self, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal"):
            yield Static("[b]Related questions[/]  [dim](Esc to close)[/]", classes="modal-title")
            with VerticalScroll():
                body = "\n\n".join(f"[b]{qid}[/]  {escape(text)}" for qid, text in self.rows)
                yield Static(body or "None.")


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
