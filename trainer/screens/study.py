"""Pick a custom study set (scheduler.study): recurring mistakes, recent lapses, a topic ahead
of schedule, or cram before the interview. Practice leaves the schedule alone unless the
learner switches `s` on: then the cards due today count as their scheduled review."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

# (option id, label): the id is "kind" or "kind:argument".
FIXED = (
    ("mistakes", "My recurring mistakes (last 30 days)"),
    ("lapsed:7", "Lapsed in the last 7 days"),
    ("lapsed:30", "Lapsed in the last 30 days"),
    ("interview", "Cram before the interview (weakest recall on the day first)"),
)


def study_options(topics: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every set the picker offers: the fixed ones, then each topic ahead of schedule."""
    return [*FIXED, *((f"ahead:{tid}", f"{title} ahead of schedule") for tid, title in topics)]


def study_arguments(option_id: str) -> dict[str, Any]:
    """"lapsed:7" -> {"kind": "lapsed", "days": 7}; "ahead:kv-cache" -> topic."""
    kind, _, arg = option_id.partition(":")
    out: dict[str, Any] = {"kind": kind}
    if kind == "lapsed":
        out["days"] = int(arg)
    elif kind == "ahead":
        out["topic"] = arg
    return out


class StudyPicker(ModalScreen[tuple[str, bool] | None]):
    """Dismisses with (option id, reschedule) or None when cancelled."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("s", "toggle_schedule", "Schedule on/off",
                tooltip="Count the cards due today as their scheduled review"),
    ]

    def __init__(self, topics: list[tuple[str, str]]) -> None:
        super().__init__()
        self.topics = topics
        self.reschedule = False

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal"):
            yield Static("", id="study-title", classes="modal-title")
            yield OptionList(*[Option(label, id=oid) for oid, label in
                               study_options(self.topics)], id="study-sets")

    def on_mount(self) -> None:
        self._title()

    def _title(self) -> None:
        schedule = ("[b]s[/]: cards due today count as reviews" if self.reschedule else
                    "[b]s[/]: the schedule is untouched")
        self.query_one("#study-title", Static).update(
            f"[b]Custom study[/]  [dim]{schedule} · Esc cancels[/]")

    def action_toggle_schedule(self) -> None:
        self.reschedule = not self.reschedule
        self._title()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss((str(event.option.id), self.reschedule))

    def action_cancel(self) -> None:
        self.dismiss(None)
