"""Home: what is due today, the streak, retention, a 12-week heatmap and a 14-day forecast."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.markup import escape
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from questions.wording import plural
from trainer.screens.base import DojoScreen
from trainer.widgets.charts import BarChart, Heatmap
from trainer.widgets.keybar import KeyBar

if TYPE_CHECKING:
    from trainer.core.plan import PlanReport
    from trainer.core.store import QuickToday
    from trainer.core.views import TodayView

WELCOME = (
    "Serving Dojo drills LLM-inference-serving interview questions with spaced repetition "
    "and graded coding labs.\nPress [b]Enter[/] to answer your first cards; the app schedules "
    "the rest."
)


class TodayScreen(DojoScreen):
    """The home screen; Enter starts today's session."""

    BINDINGS = [
        Binding("enter,space", "app.start", "Start", id="start", tooltip="Start today's session"),
        Binding(
            "c", "app.cram", "Cram", id="cram", tooltip="Practise without touching the schedule"
        ),
        Binding("u", "app.study", "Custom", id="study",
                tooltip="Custom study: mistakes, lapses, a topic ahead, cram before the interview"),
        Binding("r", "rebuild", "Rebuild", id="rebuild",
                tooltip="Rebuild the highlighted lab level from a blank stub"),
        Binding("b", "app.browse", "Browse", id="browse"),
        Binding("s", "app.stats", "Stats", id="stats"),
        Binding("p", "app.plan", "Plan", id="plan",
                tooltip="Set the interview date and your minutes a day"),
        Binding("l", "app.lab()", "Lab", id="lab"),
        Binding("m", "app.sim()", "Sims", id="sims", tooltip="Capacity, metering, fleet"),
        Binding("i", "app.mock", "Mock", id="mock",
                tooltip="A mock interview round on one clock (resumes one left open)"),
        Binding("q", "app.quit", "Quit", id="quit"),
    ]

    view: TodayView | None = None
    plan_pending = True  # the plan and readiness are computed after the rest of the view
    quick: QuickToday | None = None  # today's counts shown before the full view landed
    _from_quick = False  # the view shown was read before the store opened
    _charts: tuple[Heatmap, BarChart] | None = None  # mounted with the data (`_complete`)
    _fetches = 0  # the latest fetch's number: an older one finishing late is not painted

    def compose(self) -> ComposeResult:
        # The first paint shows the headline and the counts only: the rest of the body (the
        # plan, the lab, the charts: ~60 ms of CPU to style and lay out on this machine) is
        # mounted once there is something to show (`_complete`).
        yield Static("Serving Dojo · Today", classes="titlebar")
        with VerticalScroll(id="today-body"):
            yield Static("Loading your cards…", id="today-headline")
            yield Static("", id="today-counts")
        yield KeyBar(rows=2)  # eleven keys: one line of 80 cells cuts Mock and Quit

    def _complete(self) -> None:
        """Mount the rest of the body (once): the alert above the headline; the plan, the
        lab, the charts and the bank's errors below the counts."""
        if self._charts is not None:
            return
        body = self.query_one("#today-body")
        # What stops or changes the day (read-only data, a failed backup): first, in view.
        alert = Static("", id="today-alert")
        alert.display = False
        body.mount(alert, before="#today-headline")
        rebuilds = OptionList(id="today-rebuilds")
        rebuilds.display = False  # shown when a passed lab level is due
        # Kept: a container's children are mounted after it, so not yet found by a query.
        self._charts = (Heatmap(id="heatmap"), BarChart(height=5, bars=14, id="forecast"))
        charts = Horizontal(
            Vertical(Static("Reviews, last 12 weeks", classes="panel-title"),
                     self._charts[0], classes="panel", id="heatmap-panel"),
            Vertical(Static("Due, next 14 days", classes="panel-title"),
                     self._charts[1], classes="panel", id="forecast-panel"),
            id="today-charts")
        charts.set_class(self.size.width < 78, "narrow")
        body.mount(Static("", id="today-plan"), Static("", id="today-lab"), rebuilds, charts,
                   Static("", id="today-errors"), after="#today-counts")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "rebuild":
            return bool(self.view is not None and self.view.rebuilds)  # hidden when none
        return True

    @on(OptionList.OptionSelected, "#today-rebuilds")
    def _rebuild_selected(self, event: OptionList.OptionSelected) -> None:
        self._start_rebuild(event.option_index)

    def action_rebuild(self) -> None:
        self._complete()
        self._start_rebuild(self.query_one("#today-rebuilds", OptionList).highlighted or 0)

    def _start_rebuild(self, index: int) -> None:
        """Start the due lab level's rebuild (blank stub, the learner's file kept aside) and
        open the Lab screen on it, where the clock runs and `g` grades."""
        services = self.dojo.services
        if self.view is None or services is None or not 0 <= index < len(self.view.rebuilds):
            return
        if not self.dojo.can_save():  # the rebuild's clock and verdict could not be kept
            return
        due = self.view.rebuilds[index]
        try:
            path, session = services.start_rebuild(due.exercise, due.level)
        except (ValueError, OSError) as exc:
            self.notify(str(exc), severity="error")
            return
        moved = (f" Your file is kept at {session.moved_aside} (R on the Lab screen restores it)."
                 if session.moved_aside else "")
        self.notify(f"Rebuild {due.exercise} L{due.level}: a fresh stub at {path}, "
                    f"{plural(session.minutes, 'minute')}, hints off.{moved}")
        self.dojo.action_lab(due.exercise, due.level)

    def _show_plan(self) -> None:
        """The plan's headline and the five weakest topics' predicted recall, fitted to the
        width (the whole list is on Stats and in `dojo plan`)."""
        from trainer.core.plan import plan_lines

        report = self.view.plan if self.view is not None else None
        self._complete()
        widget = self.query_one("#today-plan", Static)
        widget.display = report is not None
        if report is not None:
            lines = plan_lines(report, width=max(40, self.size.width - 4), limit=5)
            widget.update("\n".join(escape(line) for line in lines))

    def on_resize(self) -> None:
        if self.view is not None:
            self._show_plan()
        # Side by side the two charts need ~76 columns; below that they stack, so neither
        # loses its border or days (the heatmap 30 columns, the forecast 44).
        for charts in self.query("#today-charts"):  # mounted with the data (`_complete`)
            charts.set_class(self.size.width < 78, "narrow")

    def on_screen_resume(self) -> None:
        self.reload()

    def reload(self) -> None:
        if self.dojo.load_error:
            self.query_one("#today-headline", Static).update(
                f"[b red]Could not open your data:[/] {escape(self.dojo.load_error)}"
            )
            return
        if self.dojo.services is not None:
            self._fetch()

    def _fetch(self) -> None:
        self._fetches += 1
        # Until the fresh view lands (seconds on a loaded machine), the old counts are shown
        # dimmed and marked, never as if they were today's; a view read at start before the
        # store opened (`show_quick_view`) is today's, read from the same file.
        stale = self.view is not None and not self._from_quick
        for selector in ("#today-headline", "#today-counts"):
            self.query_one(selector).set_class(stale, "stale")
        self._fetch_view(self._fetches)

    @work(thread=True, group="today")
    def _fetch_view(self, number: int) -> None:
        services = self.dojo.services
        if services is None:
            return
        view = services.today(plan=False)  # the replay behind the plan comes second
        self.app.call_from_thread(self._show, view, number)
        from trainer.core.views import plan_report_or_none

        report = plan_report_or_none(services)
        self.app.call_from_thread(self._show_plan_report, report, number)
        if report is not None and report.plan is not None:
            from trainer.core.views import prepare_plans_ahead

            prepare_plans_ahead(services)  # the next days' first starts read them

    def _show_plan_report(self, report: PlanReport | None, number: int) -> None:
        if number != self._fetches or self.view is None:
            return  # a newer fetch is under way: its own report follows
        self.view = replace(self.view, plan=report)
        self.plan_pending = False
        self._show_plan()

    def show_quick_view(self, view: TodayView) -> None:
        """The whole home read before the store opened (`QuickHome`), the plan included:
        shown until the store's own fetch repaints it."""
        if self.view is not None:
            return
        self._show(view)
        self._from_quick = True

    def show_quick(self, counts: QuickToday) -> None:
        """Today's counts read before the store opened; the full view replaces them."""
        if self.view is not None:
            return
        self.quick = counts
        if counts.first_run:
            headline = f"[b]Welcome.[/] {WELCOME}"
        elif counts.to_do:
            headline = f"[b]{plural(counts.to_do, 'card')} today.[/] Press [b]Enter[/] to start."
        else:
            headline = "Loading your cards…"  # due lab rebuilds need the full view to say
        self.query_one("#today-headline", Static).update(headline)
        self.query_one("#today-counts", Static).update(
            f"Due [b]{counts.due}[/]   New [b]{counts.new}[/]   Re-drill [b]{counts.redrill}[/]"
            f"   Streak [b]{counts.streak}[/] d")

    def _show(self, view: TodayView, number: int | None = None) -> None:
        # A fetch started before a session ended can finish after the one started when the
        # learner came home (threads cannot be cancelled): painting it would show stale counts.
        if number is not None and number != self._fetches:
            return
        self._from_quick = False
        if view.plan is None and self.view is not None:  # keep the last plan until the new one
            view = replace(view, plan=self.view.plan)
        self.plan_pending = number is not None  # a fetch's report follows
        self.view = view
        self._complete()
        for selector in ("#today-headline", "#today-counts"):
            self.query_one(selector).remove_class("stale")
        head = self.query_one("#today-headline", Static)
        alert = self.query_one("#today-alert", Static)
        alert.display = bool(view.warnings)
        alert.update("\n".join(f"[b yellow]warning:[/] {escape(w)}" for w in view.warnings))
        head.update(_headline(view))
        retention = "—" if view.retention is None else f"{view.retention:.0%}"
        self.query_one("#today-counts", Static).update(
            # the lab's questions are asked as re-drills: counted with them (#today-lab says
            # which failed case brought each back)
            f"Due [b]{view.due}[/]   New [b]{view.new}[/]   "
            f"Re-drill [b]{view.redrill + view.lab}[/]   "
            f"Streak [b]{view.streak}[/] d   Today [b]{view.reviews_today}[/]   "
            f"Retention 30 d [b]{retention}[/]"
        )
        self._show_plan()
        self._show_lab(view)
        self.refresh_bindings()
        today = view.day
        assert self._charts is not None  # mounted above (`_complete`)
        heatmap, forecast = self._charts
        heatmap.update(view.per_day, today)
        labels = [
            (today + dt.timedelta(days=i)).strftime("%a")[:2] for i in range(len(view.forecast))
        ]
        forecast.update(view.forecast[:14], labels[:14])
        errors = self.query_one("#today-errors", Static)
        if view.bank_errors:  # the warnings are at the top (#today-alert)
            shown = "\n".join(f"  • {e}" for e in view.bank_errors[:5])
            more = len(view.bank_errors) - 5
            errors.update(
                f"[b yellow]{plural(len(view.bank_errors), 'question file')} could not "
                "be loaded "
                f"(the rest work):[/]\n{shown}" + (f"\n  … and {more} more" if more > 0 else "")
            )
        else:
            errors.update("")

    def _show_lab(self, view: TodayView) -> None:
        """The questions back from the lab, and the lab levels to rebuild today."""
        back = self.query_one("#today-lab", Static)
        back.display = bool(view.lab_reasons)
        back.update("\n".join([f"[b]{plural(view.lab, 'question')} back from the lab[/] "
                               "(asked as re-drills; the schedule is untouched):"]
                              + [f"  {escape(r)}" for r in view.lab_reasons]))
        rebuilds = self.query_one("#today-rebuilds", OptionList)
        rebuilds.set_options(
            Option(f"[b]{escape(r.line)}[/]  [dim](r)[/]", id=f"{r.exercise}:{r.level}")
            for r in view.rebuilds
        )
        rebuilds.display = bool(view.rebuilds)
        if view.rebuilds:
            rebuilds.highlighted = 0


def _headline(view: TodayView) -> str:
    """What the day asks of the learner, and the key that starts it."""
    if view.read_only:  # nothing can be studied: no invitation to press Enter
        return (f"[b]{plural(view.to_do, 'card')} today, but no session can start:[/] "
                "your data is read-only. Browse (b) and Stats (s) still work.")
    if view.first_run:
        return f"[b]Welcome.[/] {WELCOME}"
    if view.to_do:
        return f"[b]{plural(view.to_do, 'card')} today.[/] Press [b]Enter[/] to start."
    if view.rebuilds:
        return (f"[b]{plural(len(view.rebuilds), 'lab level')} to rebuild today.[/] "
                "Press [b]r[/] to start the highlighted one.")
    return "[b]All done for today.[/] Cram (c) practises without touching the schedule."
