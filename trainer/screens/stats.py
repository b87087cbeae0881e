"""Stats: heatmap and daily chart, retention, per-topic accuracy, EF/interval spread, forecast,
lab progress."""

from __future__ import annotations

import datetime as dt

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from questions.wording import noun, plural
from trainer.core.plan import PlanReport
from trainer.core.stats import PREDICTED_RECALL_MEANS, TRUE_RETENTION_MEANS, RecurringMistake
from trainer.core.views import StatsView, stats_view
from trainer.screens.base import DojoScreen
from trainer.screens.modals import NoteScreen
from trainer.widgets.charts import BarChart, Heatmap
from trainer.widgets.keybar import KeyBar

FORECAST_DAYS = 24  # three columns a bar: fits 80 columns


class StatsScreen(DojoScreen):
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="stats-back"),
        Binding("n", "mistake_note", "Mistake's note", id="stats-note",
                tooltip="The concept note of the highlighted recurring mistake"),
    ]

    def compose(self) -> ComposeResult:
        yield Static("Stats", classes="titlebar")
        with VerticalScroll(id="stats-body"):
            yield Static("Loading…", id="stats-headline")
            with Vertical(classes="panel wide"):
                yield Static("Readiness: predicted recall, weakest first (FSRS)",
                             classes="panel-title")
                yield Static("", id="stats-readiness")
            with Horizontal(classes="stats-row"):
                with Vertical(classes="panel"):
                    yield Static("Reviews, last 12 weeks", classes="panel-title")
                    yield Heatmap(id="stats-heatmap")
                with Vertical(classes="panel"):
                    yield Static("Reviews per day, last 14 days", classes="panel-title")
                    yield BarChart(height=5, bars=14, id="stats-daily")
            with Horizontal(classes="stats-row"):
                with Vertical(classes="panel"):
                    yield Static("True retention", classes="panel-title")
                    yield Static("", id="stats-retention")
                with Vertical(classes="panel grow", id="stats-topics-panel"):
                    yield Static("Accuracy per topic (scheduled answers)", classes="panel-title")
                    yield Static("", id="stats-topics")
            with Vertical(classes="panel wide"):
                yield Static(f"[dim]{TRUE_RETENTION_MEANS}; {PREDICTED_RECALL_MEANS}.[/]",
                             id="stats-means")
            with Horizontal(classes="stats-row"):
                with Vertical(classes="panel grow"):
                    yield Static("Ease factor (reviewed cards)", classes="panel-title")
                    yield Static("", id="stats-ef")
                with Vertical(classes="panel grow"):
                    yield Static("Interval, days", classes="panel-title")
                    yield Static("", id="stats-intervals")
            with Vertical(classes="panel wide"):
                yield Static(f"Due, next {plural(FORECAST_DAYS, 'day')}", classes="panel-title")
                yield BarChart(height=4, bars=FORECAST_DAYS, id="stats-forecast")
            with Vertical(classes="panel wide"):
                yield Static(
                    "Your recurring mistakes, last 30 days  [dim](n: the concept note)[/]",
                    classes="panel-title",
                )
                yield OptionList(id="stats-mistakes")
            with Vertical(classes="panel wide"):
                yield Static("Lab progress", classes="panel-title")
                yield Static("", id="stats-lab")
            with Vertical(classes="panel wide"):
                yield Static("Interview rehearsals: time to first pass (oldest → latest)",
                             classes="panel-title")
                yield Static("", id="stats-rehearsals")
            with Vertical(classes="panel wide"):
                yield Static("Mock rounds: score per part (oldest → latest)",
                             classes="panel-title")
                yield Static("", id="stats-mock")
        yield KeyBar()

    mistakes: list[RecurringMistake] = []

    _plan: PlanReport | None = None

    def _show_plan(self) -> None:
        from trainer.core.plan import plan_lines

        widget = self.query_one("#stats-readiness", Static)
        if self._plan is None:
            widget.update("The plan could not be computed (see Today's warnings).")
            return
        lines = plan_lines(self._plan, width=max(40, self.size.width - 6))
        widget.update("\n".join(escape(line) for line in lines))

    def on_resize(self) -> None:
        if self.is_mounted and self._plan is not None:
            self._show_plan()
        # The first row needs ~76 columns side by side; narrower, every row stacks so no
        # chart loses its border or days.
        for row in self.query(".stats-row"):
            row.set_class(self.size.width < 78, "narrow")

    def on_mount(self) -> None:
        self.query_one("#stats-body").focus()
        self.reload()

    @on(OptionList.OptionSelected, "#stats-mistakes")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self._open_note(int(event.option.id))

    def action_mistake_note(self) -> None:
        self._open_note(self.query_one("#stats-mistakes", OptionList).highlighted or 0)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "mistake_note":
            return bool(self.mistakes)
        return True

    def _open_note(self, index: int) -> None:
        """A recurring mistake opens its topic's concept note."""
        if self.dojo.services is None or not 0 <= index < len(self.mistakes):
            return
        mistake = self.mistakes[index]
        topic = self.dojo.services.bank.topics.get(mistake.topic)
        note = (topic.note if topic is not None else "") or "_No note._"
        self.app.push_screen(NoteScreen(mistake.topic_title, note))

    def reload(self) -> None:
        if self.dojo.load_error:  # e.g. $DOJO_NOW out of range: say why, never "Loading…"
            self._failed(self.dojo.load_error)
        elif self.dojo.services is not None:
            self._fetch()
            self._fetch_mock()

    @work(thread=True, exclusive=True, group="stats-mock")
    def _fetch_mock(self) -> None:
        from trainer.core.mock import history_lines

        services = self.dojo.services
        if services is None:
            return
        try:
            lines = history_lines(services.store)
        except Exception as exc:  # a store error: said in the panel
            lines = [f"Could not read the mock rounds: {exc}"]
        text = "\n".join(escape(line) for line in lines)
        self.app.call_from_thread(
            self.query_one("#stats-mock", Static).update,
            text or "No mock round finished yet (i on the home screen, or `dojo mock`).")

    def _failed(self, why: str) -> None:
        self.query_one("#stats-headline", Static).update(
            f"[b red]Could not open your data:[/] {escape(why)}")

    @work(thread=True, exclusive=True, group="stats")
    def _fetch(self) -> None:
        services = self.dojo.services
        if services is None:
            return
        try:
            view = stats_view(services)
        except Exception as exc:  # a store error (disk, damage): said on the screen
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self._show, view)

    def _show(self, v: StatsView) -> None:
        today = v.day
        total = sum(v.per_day.values())
        self.query_one("#stats-headline", Static).update(
            f"[b]{total}[/] {noun(total, 'answer')} in the last year · streak [b]{v.streak}[/] d"
        )
        self.query_one("#stats-heatmap", Heatmap).update(v.per_day, today)
        days = [today - dt.timedelta(days=13 - i) for i in range(14)]
        self.query_one("#stats-daily", BarChart).update(
            [v.per_day.get(d, 0) for d in days], [d.strftime("%d") for d in days]
        )
        self.query_one("#stats-retention", Static).update(
            "\n".join(
                f"{w:>6} {'—' if r is None else f'{r:.0%}':>4} [dim]({n})[/]"
                for w, r, n in v.retention
            )
            + f"\n{'weekly':>6} {_sparkline(v.retention_weeks)} [dim](12 w)[/]"
            + f"\nrecall {'—' if v.predicted_recall is None else f'{v.predicted_recall:.0%}':>4}"
            " [dim](now)[/]"
        )
        self.query_one("#stats-topics", Static).update(_topic_rows(v))
        self.mistakes = v.mistakes
        mistakes = self.query_one("#stats-mistakes", OptionList)
        mistakes.set_options(
            Option(f"[b]×{m.count}[/] {escape(m.says)}  [dim]{escape(m.question_id)} · "
                   f"{escape(m.topic_title)}[/]", id=str(i))
            for i, m in enumerate(v.mistakes)
        )
        if v.mistakes:
            mistakes.highlighted = 0
        else:
            mistakes.set_options([Option("[dim]No named mistake in the last 30 days.[/]",
                                         disabled=True)])
        self.refresh_bindings()
        self.query_one("#stats-ef", Static).update(_histogram(v.ef))
        self.query_one("#stats-intervals", Static).update(_histogram(v.intervals))
        self.query_one("#stats-forecast", BarChart).update(v.forecast[:FORECAST_DAYS])
        self._plan = v.plan
        self._show_plan()
        self.query_one("#stats-lab", Static).update(
            "\n".join(
                f"{ex} L{lvl}: {'[green]passing[/]' if ok else '[red]failing[/]'}  "
                f"{plural(n, 'attempt')}{f', best {best}' if best else ''}"
                for ex, lvl, ok, n, best in v.lab
            )
            or "No lab attempts yet (l on the home screen)."
        )
        self.query_one("#stats-rehearsals", Static).update(
            "\n".join(escape(line) for line in v.rehearsals)
            or "No rehearsal passed yet (I on the Lab screen, or r on Today for a rebuild)."
        )


SPARKS = "▁▂▃▄▅▆▇█"


def _sparkline(rates: list[float | None]) -> str:
    """One character per week: low to high retention; '·' for a week with no mature review."""
    return "".join(
        "·" if r is None else SPARKS[min(len(SPARKS) - 1, int(r * len(SPARKS)))] for r in rates
    )


def _bar(fraction: float, width: int = 10) -> str:
    full = round(max(0.0, min(1.0, fraction)) * width)
    return f"[green]{'█' * full}[/][dim]{'░' * (width - full)}[/]"


def _histogram(pairs: list[tuple[str, int]]) -> str:
    if not pairs:
        return "No cards reviewed yet."
    peak = max(c for _, c in pairs) or 1
    return "\n".join(f"{label:>8} {'█' * round(16 * c / peak):<16} {c}" for label, c in pairs)


def _topic_rows(v: StatsView) -> RenderableType:
    """Bar, percentage, title per topic; a long title wraps under itself (a grid), never
    under the bars nor past the panel's edge (it was cut at 100 columns)."""
    if not v.topics:
        return "No answers yet."
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, justify="right")
    grid.add_column(ratio=1)
    for t, a, c, o in v.topics:
        share = c / a if a else 0
        grid.add_row(Text.from_markup(_bar(share)), f"{share:.0%}", Text.from_markup(
            f"{escape(t)} [dim]({a}" + (f", {o} mistyped" if o else "") + ")[/]"))
    if not v.overridden:
        return grid
    return Group(grid, Text.from_markup(
        f"[dim]{plural(v.overridden, 'answer')} counted right after a typo this year[/]"))
