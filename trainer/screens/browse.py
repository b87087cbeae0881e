"""Browse every question: filter by topic/status, search, preview with history, (un)suspend."""

from __future__ import annotations

from rich.console import Group
from rich.markdown import Markdown as RichMarkdown
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Input, Select, Static

from questions.answers import choice_label
from trainer.core.syllabus import Coverage, coverage
from trainer.core.views import BrowseRow, HistoryRow, browse_rows, card_history
from trainer.screens.base import DojoScreen
from trainer.widgets.keybar import KeyBar

STATUSES = ("due", "new", "scheduled", "suspended", "leech", "buried")
ITEM = "item:"  # a topic-filter value naming a syllabus item instead of a topic
FLAGGED = "flagged"  # a filter beside the statuses: questions you flagged for editing


class BrowseScreen(DojoScreen):
    AUTO_FOCUS = "#browse-table"
    BINDINGS = [
        Binding("escape", "back", "Back", id="browse-back"),
        Binding("slash", "search", "Search", id="browse-search"),
        # ctrl+s as on the review screen: a bare `s` is Stats on Today, and a destructive key
        # means the same everywhere (priority: it works from the search box and filters too).
        Binding("ctrl+s", "toggle_suspend", "Suspend/unsuspend", id="browse-suspend",
                priority=True),
        Binding("t", "focus_topic", "Topic", id="browse-topic", show=False),
        Binding("f", "focus_status", "Status", id="browse-status", show=False),
        Binding("y", "syllabus", "Syllabus", id="browse-syllabus"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[BrowseRow] = []
        self.syllabus: list[Coverage] = []

    def compose(self) -> ComposeResult:
        yield Static("Browse · / search · t topic · f status · y syllabus · ^s suspend",
                     classes="titlebar")
        with Horizontal(id="browse-filters"):
            yield Input(placeholder="search text or id  (/)", id="browse-search")
            yield Select[str]([], prompt="all topics", id="browse-topic")
            yield Select[str]([(s, s) for s in (*STATUSES, FLAGGED)], prompt="any status",
                              id="browse-status")
        yield DataTable(id="browse-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="browse-preview"):
            yield Static("Loading…", id="browse-card")
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # What a learner scans for first (status, due) right after the id, so they stay on
        # screen at 60 columns; the topic (long) goes last.
        table.add_columns("id", "status", "due", "ivl", "EF", "lapses", "kind", "topic")
        self.reload()

    def reload(self) -> None:
        if self.dojo.load_error:  # e.g. $DOJO_NOW out of range: say why, never an empty table
            self._failed(self.dojo.load_error)
        elif self.dojo.services is not None:
            self._fetch()

    def _failed(self, why: str) -> None:
        self.query_one("#browse-card", Static).update(
            Text.assemble(("Could not open your data: ", "bold red"), why))

    @work(thread=True, exclusive=True, group="browse")
    def _fetch(self) -> None:
        services = self.dojo.services
        if services is None:
            return
        try:
            rows = browse_rows(services)
            items = coverage(services.store, services.bank, services.now)
        except Exception as exc:  # a store error (disk, damage): said on the screen
            self.app.call_from_thread(self._failed, str(exc))
            return
        topics = sorted((t.title, tid) for tid, t in services.bank.topics.items())
        topics += [(f"syllabus: {c.item.title}", ITEM + c.item.id) for c in items]
        self.app.call_from_thread(self._loaded, rows, topics, items)

    def _loaded(self, rows: list[BrowseRow], topics: list[tuple[str, str]],
                items: list[Coverage]) -> None:
        self.rows = rows
        self.syllabus = items
        select = self.query_one("#browse-topic", Select)
        if not select._options or len(select._options) <= 1:
            select.set_options(topics)
        self._apply_filters()

    def _matching(self) -> list[BrowseRow]:
        needle = self.query_one("#browse-search", Input).value.strip().lower()
        topic = self.query_one("#browse-topic", Select).value
        status = self.query_one("#browse-status", Select).value
        out = []
        item = next((c.item for c in self.syllabus
                     if isinstance(topic, str) and topic == ITEM + c.item.id), None)
        for row in self.rows:
            if item is not None:
                if row.question_id not in item.questions:
                    continue
            elif isinstance(topic, str) and row.topic != topic:
                continue
            if status == FLAGGED:
                if not row.flags:
                    continue
            elif isinstance(status, str) and row.status != status:
                continue
            if needle and needle not in row.question_id.lower() and needle not in row.text.lower():
                continue
            out.append(row)
        return out

    def _apply_filters(self) -> None:
        table = self.query_one(DataTable)
        keep = table.cursor_row
        table.clear()
        for r in self._matching():
            table.add_row(
                r.question_id,
                r.status,
                r.due.isoformat() if r.due else "—",
                str(r.interval) if r.interval is not None else "—",
                f"{r.ef:.2f}" if r.ef is not None else "—",
                str(r.lapses),
                r.kind,
                r.topic,
                key=r.question_id,
            )
        if table.row_count:
            table.move_cursor(row=min(keep, table.row_count - 1))
        else:
            self.query_one("#browse-card", Static).update("No question matches these filters.")
        self.query_one(".titlebar", Static).update(
            f"Browse · {table.row_count} of {len(self.rows)} · / search · t topic · f status · "
            "y syllabus · ^s suspend"
        )

    @on(Input.Changed, "#browse-search")
    def _search_changed(self) -> None:
        self._apply_filters()

    @on(Select.Changed)
    def _filters_changed(self) -> None:
        """A filter was picked: back to the table, so the next Esc leaves and arrows browse."""
        self._apply_filters()
        self.query_one(DataTable).focus()

    @on(Input.Submitted, "#browse-search")
    def _search_done(self) -> None:
        self.query_one(DataTable).focus()

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self._preview(str(event.row_key.value))

    @work(thread=True, exclusive=True, group="browse-preview")
    def _preview(self, question_id: str) -> None:
        services = self.dojo.services
        if services is None:
            return
        history = card_history(services, question_id)
        self.app.call_from_thread(self._show_preview, question_id, history)

    def _show_preview(self, question_id: str, history: list[HistoryRow]) -> None:
        services = self.dojo.services
        assert services is not None
        q = services.question(question_id)
        inst = q.draw(0)
        row = next((r for r in self.rows if r.question_id == question_id), None)
        header = f"[b]{question_id}[/] · {_escape(services.topic_title(q.topic))} · {q.kind}"
        if row:
            header += f" · {row.status}"
        lines: list[str] = []
        if row and row.flags:
            lines.append(f"[b yellow]Flagged ({len(row.flags)}):[/] "
                         + "; ".join(_escape(n) for n in row.flags))
        if q.kind == "mcq":
            lines += [f"  {_escape(choice_label(i, c))}" for i, c in enumerate(inst.choices)]
        elif q.kind == "case":  # its steps in order; a session asks them one at a time
            lines += [f"  {k}. {_escape(' '.join(step.prompt.replace('**', '').split()))}"
                      for k, step in enumerate(inst.steps, 1)]
        if history:
            lines.append("\n[b]History[/] (date, mode, grade, answer, interval after)")
            for h in history[-12:]:
                when = h.when.strftime("%Y-%m-%d %H:%M") if h.when else "?"
                mark = "[green]✓[/]" if h.correct else "[red]✗[/]"
                ivl = f"{h.interval} d" if h.interval is not None else ""
                typo = " [dim](mistyped, counted right)[/]" if h.overridden else ""
                lines.append(
                    f"  {when}  {h.mode:<7} {mark} {h.quality}  {_escape(h.answer)[:28]:<28} {ivl}"
                    + typo
                )
        else:
            lines.append("\n[dim]Never answered.[/]")
        body = Group(
            Text.from_markup(header),
            RichMarkdown(inst.prompt, hyperlinks=False),
            Text.from_markup("\n".join(lines)),
        )
        self.query_one("#browse-card", Static).update(body)

    def action_search(self) -> None:
        self.query_one("#browse-search", Input).focus()

    def action_focus_topic(self) -> None:
        self.query_one("#browse-topic", Select).focus()

    def action_syllabus(self) -> None:
        """The syllabus in the preview pane: each item's questions, studied, recall; the topic
        filter (t) picks an item's questions."""
        lines = ["[b]Syllabus coverage[/] (questions · studied · recall; t filters by item)"]
        for c in self.syllabus:
            recall = "—" if c.recall is None else f"{c.recall:.0%}"
            lines.append(f"  {_escape(c.item.title)} · {c.questions} · {c.introduced} · "
                         f"{recall}")
        if not self.syllabus:
            lines.append("  [dim]Not loaded yet.[/]")
        self.query_one("#browse-card", Static).update(Text.from_markup("\n".join(lines)))

    def action_focus_status(self) -> None:
        self.query_one("#browse-status", Select).focus()

    def action_back(self) -> None:
        """Esc leaves, wherever the focus is (an open filter list closes itself first)."""
        self.app.pop_screen()

    def action_toggle_suspend(self) -> None:
        services = self.dojo.services
        table = self.query_one(DataTable)
        if services is None or not table.row_count:
            return
        qid = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        row = next(r for r in self.rows if r.question_id == qid)
        if row.status == "suspended":
            services.unsuspend(qid)
            self.notify(f"Unsuspended {qid}.")
        else:
            services.suspend(qid)
            self.notify(f"Suspended {qid}.")
        self.reload()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
