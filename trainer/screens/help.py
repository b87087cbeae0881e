"""F1: what the app is, and every key of the screen it was opened from."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

ABOUT = """\
[b]Serving Dojo[/]: spaced-repetition drills for LLM-serving interviews plus graded coding labs.
Answer, then grade yourself: 0–2 after a wrong answer, 3–5 after a right one (Enter = default).
Cards graded below 4 come back the same day until they reach 4. Cram never touches the schedule.
ctrl+p opens the command palette (every action); ctrl+q quits from anywhere."""


_NOTES = {
    "BrowseScreen": "\n\n[b]Browsing[/]\n"
    "  / search, t topic, f status (Enter picks), Esc back to the table;\n"
    "  arrows move the preview; s suspends or unsuspends the card.",
    "LabScreen": "\n\n[b]Lab[/]\n"
    "  s creates your file from the stub, e opens it in $EDITOR, g grades the\n"
    "  selected level in a subprocess (x or ctrl+c stops it), h shows one more hint.",
    "SimScreen": "\n\n[b]Sims[/]\n"
    "  Tab between dials; every keystroke recomputes the checks. A bad value is\n"
    "  named and the last good result stays. ctrl+r resets the dials.",
}


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close")]

    def __init__(self, target: Screen[object]) -> None:
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        rows = []
        seen = set()
        for key, active in self.target.active_bindings.items():
            b = active.binding
            if not b.description or (b.action, b.description) in seen:
                continue
            seen.add((b.action, b.description))
            keys = (
                ", ".join(
                    k
                    for k, a in self.target.active_bindings.items()
                    if a.binding.action == b.action
                )
                or key
            )
            rows.append(
                f"  [b]{keys:<16}[/] {b.description}"
                + (f"  [dim]{b.tooltip}[/]" if b.tooltip else "")
            )
        extra = self._screen_notes()
        with Vertical(classes="modal"):
            yield Static("[b]Help[/]  [dim](Esc to close)[/]", classes="modal-title")
            with VerticalScroll():
                yield Static(ABOUT + "\n\n[b]Keys here[/]\n" + "\n".join(rows) + extra)

    def _screen_notes(self) -> str:
        name = type(self.target).__name__
        if name == "ReviewScreen":
            return (
                "\n\n[b]Answering[/]\n  a–d or 1–4, or arrows + Enter for a choice; "
                "type a number (units welcome) + Enter for numeric.\n"
                "  ctrl+z / ctrl+b / ctrl+s / ctrl+f work even while typing."
            )
        return _NOTES.get(name, "")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
