"""The Textual app: a thin shell over `trainer.core` (scheduler + questions) and the lab CLI.

The first screen paints before anything heavy is imported: the store and the bank are opened in a
thread worker after the first paint, and every screen asks `DojoApp.services` once it is ready.
That worker first reads today's counts with plain sqlite3 (`scheduler.quick`, no SQLAlchemy),
then the rest of the home screen (charts, plan) from the same file and the cached study index;
the store and bank (SQLAlchemy: ~0.3 s of CPU) open once that home has painted, and Home is
fetched again from them.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from trainer.key_order import KeyOrder
from trainer.screens.base import DojoScreen

if TYPE_CHECKING:
    from trainer.core.services import Services
    from trainer.core.store import QuickToday
    from trainer.core.views import TodayView

ServicesFactory = Callable[[], "Services"]


def _default_factory() -> Services:
    """The real store and bank. $DOJO_NOW (ISO date-time) pins the clock, e.g. to try tomorrow."""
    from trainer.core.services import Services
    from trainer.core.store import pinned_now

    return Services.open(now=pinned_now())  # a bad or far-future value is refused with why


# The command palette's navigation, in order: (title, what it does, the app's action). A
# screen's own bindings are listed after these by themselves; one bound to a navigation action
# (`app.lab()`) is not listed twice. A new top-level place adds its `action_*` and a row here.
NAVIGATION: tuple[tuple[str, str, str], ...] = (
    ("Home", "Today's overview", "home"),
    ("Start today's session", "Due reviews, new cards, re-drills", "start"),
    ("Cram", "Practise a topic without touching the schedule", "cram"),
    ("Mock round", "One clock: estimates, a sim decision, a design answer and a lab level (like "
     "`dojo mock`)", "mock"),
    ("Browse", "Every question, filters, history", "browse"),
    ("Stats", "Heatmap, retention, accuracy, forecast", "stats"),
    ("Custom study", "Recurring mistakes, recent lapses, a topic ahead of schedule, cram before "
     "the interview", "study"),
    ("Plan to the interview day", "Set the date and minutes a day; the pace, and each topic's "
     "predicted recall (like `dojo plan`)", "plan"),
    ("Lab", "Coding exercises and the grader", "lab"),
    ("Sims", "Capacity, metering and fleet worksheets", "sim"),
    ("Help", "Keys on this screen (F1)", "help"),
    ("Export history", "Cards, answers, lab attempts and flags as JSON (like `dojo export`)",
     "export"),
    ("Backup now", "A copy of your database in backups/ (like `dojo backup`)", "backup"),
)


class QuickCounts(Message):
    """Posted with today's counts read straight from the database (`scheduler.quick`) while
    the store and bank still load, so the home screen shows them at once."""

    def __init__(self, counts: QuickToday) -> None:
        super().__init__()
        self.counts = counts


def _quick_counts() -> QuickToday | None:
    """The default database's counts for the first paint, or None (then the full view)."""
    from trainer.core.store import quick_counts

    return quick_counts()


class QuickHome(Message):
    """Posted with the whole home screen's data, the plan included, read before the store
    opens (`trainer.core.views.quick_today_view`)."""

    def __init__(self, view: TodayView) -> None:
        super().__init__()
        self.view = view


def _quick_home() -> TodayView | None:
    from trainer.core.views import quick_today_view

    return quick_today_view()


class ServicesReady(Message):
    """Posted to the app when the store and bank are open (or failed to open)."""

    def __init__(self, error: str | None = None) -> None:
        super().__init__()
        self.error = error


class DojoApp(App[None]):
    """Serving Dojo's TUI."""

    TITLE = "Serving Dojo"
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    BINDINGS = [
        Binding("f1", "help", "Help", id="help", tooltip="Keys and what the app does"),
        # `?` too, where a newcomer looks first; not a priority binding, so a focused Input
        # (an answer, a search) still takes it as a character
        Binding("question_mark", "help", "Help", show=False,
                tooltip="Keys and what the app does"),
        Binding("ctrl+q", "quit", "Quit", id="quit", show=False, priority=True),
    ]

    def __init__(
        self,
        services_factory: ServicesFactory | None = None,
        *,
        editor: Callable[[DojoApp, Path], None] | None = None,
        lab_command: list[str] | None = None,
    ) -> None:
        super().__init__()
        self._factory = services_factory or _default_factory
        # Today's counts before the store opens: only for the default database.
        self._quick = _quick_counts if services_factory is None else None
        self.services: Services | None = None
        self.load_error: str | None = None
        # Replaceable so tests (where App.suspend is unsupported) can stand in for $EDITOR.
        self.open_editor: Callable[[DojoApp, Path], None] = editor or _suspend_and_edit
        # The lab CLI the lab screen runs; `python -m trainer lab ...` by default.
        self.lab_command = lab_command
        self._palette_lines: dict[str, str] = {}
        self._start_when_ready = False  # Enter pressed before the store opened
        self.key_order = KeyOrder(self)  # keys one at a time, in the order typed

    def run(self, *args: Any, **kwargs: Any) -> None:
        """Run the app. What the imports built (Textual, Rich, the app: ~34,000 tracked
        objects) lives as long as the process: frozen before the first paint, a full
        collection no longer walks it (one cost ~25 ms, against the ~35 ms a bare Textual app
        takes from `run` to its first paint). `on_unmount` unfreezes."""
        gc.freeze()
        return super().run(*args, **kwargs)

    async def on_event(self, event: events.Event) -> None:
        """A key or paste from the terminal waits until the one before has finished
        (`trainer.key_order`); Textual then routes it to the focus of that moment."""
        if (isinstance(event, events.Key | events.Paste) and not event.is_forwarded
                and not self.key_order.take(event)):
            return
        await super().on_event(event)

    def on_mount(self) -> None:
        from trainer.screens.today import TodayScreen

        self.push_screen(TodayScreen())
        self.call_after_refresh(self._load)

    @work(thread=True, exclusive=True, group="load")
    def _load(self) -> None:
        if self._quick is not None:
            counts = self._quick()
            if counts is not None:
                self.post_message(QuickCounts(counts))
                home = _quick_home()
                if home is not None:  # the store opens after this home paints
                    self.post_message(QuickHome(home))
                    return
        self._open_services()

    @work(thread=True, exclusive=True, group="load")
    def _open(self) -> None:
        self._open_services()

    def _open_services(self) -> None:
        """Open the store and the bank (on a worker thread), then post ServicesReady."""
        try:
            services = self._factory()
        except Exception as exc:  # shown on the home screen rather than crashing the app
            from trainer.core.errors import StoreError

            known = isinstance(exc, StoreError | ValueError)  # messages written for learners
            self.post_message(ServicesReady(str(exc) if known else f"{type(exc).__name__}: {exc}"))
            return
        self.services = services
        self.post_message(ServicesReady())

    def on_quick_counts(self, message: QuickCounts) -> None:
        from trainer.screens.today import TodayScreen

        for screen in self.screen_stack:
            if isinstance(screen, TodayScreen):
                screen.show_quick(message.counts)

    def on_quick_home(self, message: QuickHome) -> None:
        from trainer.screens.today import TodayScreen

        for screen in self.screen_stack:
            if isinstance(screen, TodayScreen):
                screen.show_quick_view(message.view)
        self.call_after_refresh(self._open)  # once the home is on screen

    def on_services_ready(self, message: ServicesReady) -> None:
        from trainer.screens.today import TodayScreen

        self.load_error = message.error
        # What start-up built (the bank, the store's tables, the widgets) lives as long as the
        # app: out of the collector's sight, a full collection no longer walks it. Over 120
        # answers ~1 in 12 met a full collection of that heap, at 115-150 ms of CPU each.
        gc.freeze()  # undone when the app ends (`on_unmount`)
        for screen in self.screen_stack:
            if isinstance(screen, DojoScreen):
                screen.reload()
        if self._start_when_ready:
            self._start_when_ready = False
            if self.load_error is None and isinstance(self.screen, TodayScreen):
                self.call_after_refresh(self.start_session)  # once Home has its fetch

    def on_unmount(self) -> None:
        gc.unfreeze()  # what the app froze can be collected again (tests run many apps)

    async def action_quit(self) -> None:
        """Quit; a verdict showing but not graded (on a review screen anywhere in the stack) is
        saved first with Enter's grade, and the terminal says so after the app closes."""
        from trainer.screens.review import ReviewScreen

        notes = []
        for screen in self.screen_stack:
            saved = screen.save_checked() if isinstance(screen, ReviewScreen) else None
            if saved is None:
                continue
            question_id, grade, write = saved
            try:
                write.result(timeout=30)
            except Exception as exc:  # said, not raised: the app is closing
                notes.append(f"Your answer to {question_id} was not saved: {exc}")
            else:
                notes.append(f"Saved your answer to {question_id} with grade {grade} (Enter's): "
                             "it was checked but not graded when you quit.")
        self.exit(message="\n".join(notes) or None)

    # -- navigation, shared by every screen and the command palette --------------------------

    def action_help(self) -> None:
        from trainer.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_home(self) -> None:
        from trainer.screens.today import TodayScreen

        while len(self.screen_stack) > 2 and not isinstance(self.screen, TodayScreen):
            self.pop_screen()
        if isinstance(self.screen, DojoScreen):
            self.screen.reload()

    def action_browse(self) -> None:
        from trainer.screens.browse import BrowseScreen

        self.push_screen(BrowseScreen())  # on top: Esc comes back here, a session is kept

    def action_stats(self) -> None:
        from trainer.screens.stats import StatsScreen

        self.push_screen(StatsScreen())

    def action_plan(self) -> None:
        """Set (or clear) the interview date and minutes a day, as `dojo plan`."""
        from trainer.screens.plan import PlanScreen, parse_plan

        services = self.services
        if services is None:
            self.notify("Still loading…")
            return
        plan = services.store.plan()
        current = "" if plan is None else f"{plan.interview} {plan.minutes}"

        def done(text: str | None) -> None:
            from trainer.core.plan import new_plan

            if text is None or services is None:
                return
            parsed = parse_plan(text)
            if parsed is not None and parsed[0] <= services.day():
                self.notify(f"{parsed[0]} is not after today: the plan is unchanged.",
                            severity="warning")
                return
            new = None if parsed is None else new_plan(*parsed)
            services.write(lambda store: store.set_plan(new)).result()
            self.notify("Plan cleared." if new is None else
                        f"Plan: interview {new.interview}, {new.minutes} min/day.")
            reload = getattr(self.screen, "reload", None)
            if callable(reload):
                reload()

        self.push_screen(PlanScreen(current), done)

    def action_lab(self, exercise: str | None = None, level: int | None = None) -> None:
        """Open the lab, on `exercise`'s `level` when given (a question's `l lab X L2` link)."""
        from trainer.screens.lab_level import lab_screen

        self.push_screen(lab_screen(exercise, level))

    def action_sim(self, name: str | None = None) -> None:
        from trainer.screens.sim import SimScreen

        self.push_screen(SimScreen(name))

    def action_start(self) -> None:
        self.start_session()

    def action_cram(self) -> None:
        from trainer.screens.cram import CramPicker

        if self.services is None:
            self.notify("Still loading…")
            return
        if not self.can_save():
            return
        self.push_screen(CramPicker(self.services.today().topics), self._start_cram)

    def action_study(self) -> None:
        """Custom study: recurring mistakes, recent lapses, a topic ahead, cram before the
        interview (scheduler.study)."""
        from trainer.screens.study import StudyPicker

        if self.services is None:
            self.notify("Still loading…")
            return
        if not self.can_save():
            return
        topics = sorted((tid, t.title) for tid, t in self.services.bank.topics.items())
        self.push_screen(StudyPicker(topics), self._start_study)

    def _start_study(self, picked: tuple[str, bool] | None) -> None:
        from questions.wording import plural
        from trainer.screens.study import study_arguments

        if picked is None or self.services is None:
            return
        option, reschedule = picked
        title, session = self.services.start_custom(**study_arguments(option),
                                                    reschedule=reschedule)
        if session.current is None:
            self.notify(f"{title}: nothing to study.")
            return
        self.notify(f"{title}: {plural(session.remaining, 'card')}"
                    + ("; the ones due today count as reviews." if reschedule else
                       "; the schedule is untouched."))
        self._push_review(session)

    def action_mock(self) -> None:
        """Resume the mock round left open, or start one (`dojo mock` headless)."""
        from trainer.core.mock import new_round, resume, resume_note
        from trainer.screens.mock import MockScreen

        if self.services is None:
            self.notify("Still loading…")
            return
        if not self.can_save():
            return
        mock = resume(self.services.store, self.services.now)
        if mock is None:
            mock = new_round(self.services, rng=self.services.rng)
        else:
            self.notify(resume_note(mock, self.services.day()), timeout=10)
        self.action_home()
        self.push_screen(MockScreen(mock))

    def _start_cram(self, topic: str | bool | None) -> None:
        if topic is False or self.services is None:
            return
        session = self.services.start_cram(topic if isinstance(topic, str) else None)
        self._push_review(session)

    def start_session(self) -> None:
        if self.services is None:
            # Home can show the day before the store opens (`QuickHome`): Enter pressed
            # then starts the session as soon as it is open.
            if self.load_error is None:
                self._start_when_ready = True
            self.notify("Opening your cards…")
            return
        if not self.can_save():
            return
        session = self.services.start_session()
        if session.current is None:
            self.notify("Nothing due today. Cram (c) practises without touching the schedule.")
            return
        self._push_review(session)

    def can_save(self) -> bool:
        """Refuse a session that cannot save (read-only data) before its first card: every
        way into one (start, cram, custom study, the mock round, a lab rebuild, a question
        practised from Related or the palette) asks this first."""
        if self.services is None:
            self.notify("Still loading…")
            return False
        why = self.services.cannot_save()
        if why is not None:
            self.notify(f"No session: {why} Browse and Stats still work.", severity="error",
                        timeout=15)
        return why is None

    def _push_review(self, session: object) -> None:
        from trainer.core.session import Session
        from trainer.screens.review import ReviewScreen

        assert isinstance(session, Session)
        if not self.can_save():  # the last gate: no review screen that would lose its answers
            return
        if session.current is None:
            self.notify("No cards to show.")
            return
        self.action_home()
        self.push_screen(ReviewScreen(session))

    # -- command palette: every binding of the active screen plus navigation ----------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        for title, what, action in NAVIGATION:
            yield SystemCommand(title, what, getattr(self, f"action_{action}"))
        yield from self._content_commands()
        # A binding to a navigation action is listed above already; the rest is plumbing every
        # Textual app has (focus moves, copy).
        seen = {name for *_, action in NAVIGATION for name in (action, f"{action}()")}
        seen |= {"command_palette", "copy_text", "focus_next", "focus_previous", "quit"}
        for active in screen.active_bindings.values():
            binding = active.binding
            action = binding.action
            bare = action.removeprefix("app.").removeprefix("screen.")
            if active.node not in (screen, self):  # widget plumbing: scrolling, cursor moves
                continue
            if not binding.description or bare in seen or not active.enabled:
                continue
            seen.add(bare)
            yield SystemCommand(
                f"{binding.description} ({binding.key_display or binding.key})",
                binding.tooltip or f"{type(active.node).__name__}: {action}",
                partial(self.run_action, action, active.node),
            )
        yield from super().get_system_commands(screen)  # theme, keys, screenshot, quit


    def _content_commands(self) -> Iterable[SystemCommand]:
        """App-wide: every lab level, every sim, every question by id (palette search)."""
        try:
            from lab.exercises import discover
            from lab.sims import SIMS

            exercises, sims = discover(), SIMS
        except Exception:  # the lab may be missing or broken: the rest of the palette stays
            exercises, sims = [], {}
        for ex in exercises:
            for lvl in ex.levels:
                yield SystemCommand(
                    f"Lab {ex.id} L{lvl.number}: {lvl.title} (start, grade)",
                    f"Open the Lab on {ex.title}, level {lvl.number}; g grades it",
                    partial(self.action_lab, ex.id, lvl.number),
                )
        for name, sim in sims.items():
            yield SystemCommand(f"Sim {name}: {getattr(sim, 'title', name)}",
                                "Run this sim with live dials", partial(self.action_sim, name))
        if self.services is not None:
            for q in self.services.bank.questions:
                yield SystemCommand(f"Question {q.id}", self._palette_line(q.id),
                                    partial(self.action_question, q.id))

    def _palette_line(self, question_id: str) -> str:
        """A question's first line for the palette: a draw's text without Markdown (drawn once
        per question, ~0.1 ms each, then kept)."""
        from trainer.core.text import plain_line

        line = self._palette_lines.get(question_id)
        if line is None and self.services is not None:
            question = self.services.bank.get(question_id)
            line = plain_line(str(question.draw(0).prompt)) if question else ""
            self._palette_lines[question_id] = line
        return line or ""

    def studied(self, question_id: str) -> bool:
        """Whether the learner has answered this card in a review (its answer may be shown);
        a read that fails counts as not studied, which hides the answer."""
        if self.services is None:
            return False
        try:
            return not self.services.store.card(question_id).is_new
        except Exception:  # unknown card, unreadable store
            return False

    def practise(self, question_id: str) -> None:
        """One question now, on fresh numbers, in cram mode: logged, never rescheduled."""
        from trainer.core.session import Session
        from trainer.screens.review import ReviewScreen

        if self.services is None or not self.can_save():
            return
        item = self.services.draw(question_id, "cram")
        self.push_screen(ReviewScreen(Session(self.services, [item], [], cram=True),
                                      practice=True))

    def action_question(self, question_id: str) -> None:
        """Read one question (prompt, answer, explanation) without grading it."""
        from trainer.screens.modals import QuestionScreen

        question = self.services.bank.get(question_id) if self.services else None
        if question is None:
            self.notify(f"{question_id} is not in the question bank.", severity="warning")
            return
        self.push_screen(QuestionScreen(question, studied=self.studied(question_id)))

    def action_export(self) -> None:
        self._export()

    def action_backup(self) -> None:
        self._backup()

    @work(thread=True, group="export")
    def _export(self) -> None:
        from trainer.core.store import export_history, new_export_path

        services = self.services
        if services is None:
            self.call_from_thread(self.notify, "Still loading…")
            return
        store = services.store
        try:
            target = new_export_path(store)
            data = export_history(store, target)
        except Exception as exc:  # disk full, read-only: say it, keep going
            self.call_from_thread(self.notify, f"Export failed: {exc}", severity="error")
            return
        from questions.wording import plural

        self.call_from_thread(self.notify, f"Exported {plural(len(data['cards']), 'card')} and "
                              f"{plural(len(data['reviews']), 'answer')} to {target}", timeout=10)

    @work(thread=True, group="backup")
    def _backup(self) -> None:
        services = self.services
        if services is None:
            self.call_from_thread(self.notify, "Still loading…")
            return
        try:
            path = services.store.backup()
        except Exception as exc:  # disk full: the partial copy is removed
            self.call_from_thread(self.notify, f"Backup failed: {exc}", severity="error")
            return
        self.call_from_thread(self.notify, f"Backed up to {path}", timeout=10)


class EditorError(Exception):
    """$EDITOR could not be started; the message names it."""


def _suspend_and_edit(app: DojoApp, path: Path) -> None:
    """Hand the terminal to $EDITOR (or $VISUAL, else vi) and come back when it exits.

    The editor is looked up before the app lets go of the terminal, and a failure to start it
    is caught inside the suspension, so the app always takes the terminal back (an exception
    leaving `App.suspend` skips its resume: a blank screen in cooked mode)."""
    import os
    import shlex
    import shutil
    import subprocess

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        command = shlex.split(editor)
    except ValueError as exc:
        raise EditorError(f"could not start the editor `{editor}`: {exc}") from exc
    if not command or shutil.which(command[0]) is None:
        name = command[0] if command else editor
        raise EditorError(f"could not start the editor `{name}`: not found (set $EDITOR "
                          "to an installed editor)")
    failed: OSError | None = None
    with app.suspend():
        try:
            subprocess.run([*command, str(path)], check=False)
        except OSError as exc:
            failed = exc
    if failed is not None:
        raise EditorError(f"could not start the editor `{command[0]}`: "
                          f"{failed.strerror or failed}")


def run_app() -> None:
    app = DojoApp()
    try:
        app.run()
    finally:
        if app.services is not None:
            from trainer.core.views import prepare_plans_ahead

            try:  # with answers since the home last showed the plan, the next start would
                # simulate it again: keep today's and the next days' (a read when unchanged)
                prepare_plans_ahead(app.services, first=0)
            finally:
                app.services.close()  # lands any answer still being written
