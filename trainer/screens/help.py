"""F1: what the app is, and every key of the screen it was opened from."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

# One paragraph per line: the modal wraps them to its width (a hard break mid-sentence showed
# as a ragged half line at 60 columns).
ABOUT = (
    "[b]Serving Dojo[/]: spaced-repetition drills for LLM-serving interviews plus graded coding "
    "labs.\nAnswer, then grade yourself: 0–2 after a wrong answer, 3–5 after a right one (Enter "
    "= default). Cards graded below 4 come back the same day until they reach 4. Grades 3, 4 "
    "and 5 differ in how much they change the card's ease (how fast its intervals grow), even "
    "when they show the same next interval. Cram never touches the schedule.\nctrl+p opens the "
    "command palette (every action); ctrl+q quits from anywhere."
)


_NOTES = {
    "TodayScreen": "\n\n[b]Labs that come back[/]\n"
    "  A lab level you passed is a card too: when it is due it is listed here, and r "
    "rebuilds it from a blank stub (your file kept; R on the Lab screen restores it).",
    "BrowseScreen": "\n\n[b]Browsing[/]\n"
    "  / search, t topic, f status (Enter picks, back to the table), Esc leaves; "
    "arrows move the preview; ctrl+s suspends or unsuspends the card (as in a review).",
    "LabScreen": "\n\n[b]Lab[/]\n"
    "  s creates your file from the stub, e opens it in $EDITOR, g grades the "
    "selected level in a subprocess (x or ctrl+c stops it), h shows one more hint.",
    "SimScreen": "\n\n[b]Sims[/]\n"
    "  Tab between dials; every keystroke recomputes the checks. A bad value is "
    "named and the last good result stays. ctrl+r resets the dials.",
}


def _key_rows(node: DOMNode, target: Screen[object]) -> list[tuple[str, str]]:
    """`node`'s own bindings (the screen's actions, not its widgets' editing and scrolling
    keys), in the order the screen declares them; one not usable right now is dimmed with
    when it applies, so `n`/`r`/`l` are listed before a card is answered too."""
    active = {a.binding.action: a.enabled for a in target.active_bindings.values()
              if a.node is node}
    order: list[str] = []
    keys: dict[str, list[str]] = {}
    info: dict[str, Binding] = {}
    for b in _own_bindings(node):
        if not b.description:
            continue
        if b.action not in keys:
            order.append(b.action)
            keys[b.action], info[b.action] = [], b
        for key in b.key.split(","):
            keys[b.action].append(target.app.get_key_display(b.with_key(key.strip())))
    rows = []
    for action in order:
        b = info[action]
        label = f"[b]{', '.join(dict.fromkeys(keys[action]))}[/]"
        tip = f"  [dim]{b.tooltip}[/]" if b.tooltip else ""
        line = f"{b.description}{tip}"
        if not active.get(action, False):
            label, line = f"[dim]{label}[/]", f"[dim]{line}  (not now)[/]"
        rows.append((label, line))
    return rows


def _grid(rows: list[tuple[str, str]]) -> Table:
    """Key and what it does; a long description wraps under itself, not under the keys (at
    60 columns it broke into the key column mid-sentence)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, min_width=18)
    grid.add_column(ratio=1)
    for label, line in rows:
        grid.add_row(Text.from_markup("  " + label), Text.from_markup(line))
    return grid


def _own_bindings(node: DOMNode) -> list[Binding]:
    """The bindings the app's own classes declare (not Textual's focus and scroll plumbing)."""
    out: list[Binding] = []
    for cls in reversed(type(node).__mro__):
        if cls.__module__.startswith("trainer."):
            out += [b for b in cls.__dict__.get("BINDINGS", ()) if isinstance(b, Binding)]
    return out


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close")]

    def __init__(self, target: Screen[object]) -> None:
        super().__init__()
        self.target = target

    def compose(self) -> ComposeResult:
        own = _key_rows(self.target, self.target)
        app = _key_rows(self.app, self.target)
        extra = self._screen_notes()
        with Vertical(classes="modal"):
            yield Static("[b]Help[/]  [dim](Esc to close)[/]", classes="modal-title")
            palette = ("[b]ctrl+p[/]", "Command palette  [dim]every screen, a question by id, "
                       "a lab level, a sim, export, backup[/]")
            with VerticalScroll():
                yield Static(Group(
                    Text.from_markup("[b]Keys here[/]"), _grid(own),
                    Text.from_markup(extra.lstrip("\n") + "\n") if extra else Text(""),
                    Text.from_markup("[b]Everywhere[/]"), _grid([*app, palette]),
                    Text(""), Text.from_markup(ABOUT), Text(""),
                    Text.from_markup("[dim]Lists, tables and text fields take the usual arrow, "
                                     "Page and editing keys.[/]"),
                ), id="help-body")

    def _screen_notes(self) -> str:
        name = type(self.target).__name__
        if name == "ReviewScreen":
            return (
                "\n\n[b]Answering[/]\n  a–d or 1–4, or arrows + Enter for a choice; "
                "type a number (units welcome) + Enter for numeric. "
                "  ctrl+z / ctrl+b / ctrl+s / ctrl+f work even while typing."
            )
        return _NOTES.get(name, "")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
