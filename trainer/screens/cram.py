"""Pick what to cram: every card or one topic. Cram never touches the schedule."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


class CramPicker(ModalScreen[str | None | bool]):
    """Dismisses with a topic id, None for all topics, or False when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, topics: list[tuple[str, str]]) -> None:
        super().__init__()
        self.topics = topics

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal"):
            yield Static(
                "[b]Cram[/]: practise without touching the schedule  [dim](Esc cancels)[/]",
                classes="modal-title",
            )
            yield OptionList(
                Option("All topics", id="*"),
                *[Option(f"{title}  [dim]{tid}[/]", id=tid) for tid, title in self.topics],
                id="cram-topics",
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(None if event.option.id == "*" else event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(False)
