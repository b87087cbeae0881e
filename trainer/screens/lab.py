"""The lab: exercises and levels with status; start, edit in $EDITOR, grade (streamed), hints.

Grading goes to a warm `dojo lab serve` (`trainer.core.lab_serve.GradingServer`, whose protocol is
written down there) from an async worker, so a CPU-heavy grader never freezes the UI; the typed
grader events come back as they happen; cancelling the worker kills the server's whole process
group. Everything about the lab itself (catalogue, rehearsals, hints, cards) is asked of
`trainer.core.lab`: screens never import `lab`.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, OptionList, ProgressBar, RichLog, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from questions.wording import plural
from trainer.core import lab as service
from trainer.core.lab import Catalogue, LevelRow, Summary
from trainer.core.lab_serve import GradingServer, PrepareReply, Served, ServeRequest
from trainer.screens.lab_results import LabResultsScreen
from trainer.screens.modals import NoteScreen
from trainer.widgets.keybar import KeyBar

if TYPE_CHECKING:
    from textual.timer import Timer

    from trainer.app import DojoApp


def lab_command(app: DojoApp) -> list[str]:
    """The lab CLI: `python -m trainer lab` unless the app was given another one (tests)."""
    return list(app.lab_command or [sys.executable, "-m", "trainer", "lab"])


PREPARE_AFTER_S = 1.0  # a selection held this long starts the grading child ahead
MARKS = {"passing": "[green]✓[/]", "failing": "[red]✗[/]", "started": "…"}  # status marks


def _option_label(mark: str, row: LevelRow) -> str:
    """Mark, exercise and level, then the level's title: wrapped in the list's width, never cut
    (at 60 and 80 columns the titles lost their ends)."""
    return f"{mark} {row.exercise} L{row.level} [dim]{escape(row.level_title)}[/]"


class TaskScreen(NoteScreen):
    """The exercise statement; code blocks wrap (a signature must never be cut off)."""

    DEFAULT_CSS = """
    TaskScreen MarkdownFence { overflow: hidden hidden; }
    TaskScreen MarkdownFence > Label { width: 1fr; }
    """


class SeedScreen(ModalScreen[int | None]):
    """Ask for the seed of the next gradings: an earlier run's (its replay line names it) to
    replay its hidden cases, or nothing for a fresh random one each time. Dismissed with the
    seed, -1 for random, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, current: int | None) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        now = f"now {self.current}" if self.current is not None else "now random"
        with Vertical(classes="modal small"):
            yield Static(f"[b]Seed for the next gradings[/] ({now})", classes="modal-title")
            yield Input(placeholder="a seed, or empty for random",
                        type="integer", id="lab-seed-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.dismiss(int(text) if text.lstrip("-").isdigit() else -1)

    def action_cancel(self) -> None:
        self.dismiss(None)


class LabScreen(LabResultsScreen):
    AUTO_FOCUS = "#lab-list"
    DEFAULT_CSS = """
    #lab-results-title { height: auto; color: $text-muted; }
    #lab-clock { height: auto; color: $warning; text-style: bold; }
    """
    BINDINGS = [
        Binding("g,enter", "grade", "Grade", id="lab-grade", tooltip="Grade the selected level"),
        Binding("s", "start", "Start", id="lab-start", tooltip="Create your workspace file"),
        Binding("e", "edit", "Edit", id="lab-edit", tooltip="Open the workspace in $EDITOR"),
        Binding("h", "hint", "Hint", id="lab-hint", tooltip="Reveal the next hint"),
        Binding("i", "statement", "Task", id="lab-statement", tooltip="The exercise statement"),
        Binding("n", "next_level", "Next level", id="lab-next",
                tooltip="Start the next level of this exercise"),
        Binding("S", "seed", "Seed", id="lab-seed",
                tooltip="Set the seed of the next gradings (an earlier run's replays its "
                        "hidden cases)"),
        Binding("I", "interview", "Interview", id="lab-interview",
                tooltip="Rehearse this level: your file aside, a fresh stub, a 45-minute clock, "
                        "no hints"),
        Binding("R", "restore", "Restore", id="lab-restore",
                tooltip="End the interview rehearsal and put your own file back"),
        Binding(
            "x,ctrl+c",
            "cancel",
            "Cancel",
            id="lab-cancel",
            priority=True,
            tooltip="Stop the running grader",
        ),
        Binding("escape", "back", "Back", id="lab-back"),
    ]

    def __init__(self, exercise: str | None = None) -> None:
        super().__init__()
        self.initial = exercise
        self.rows: list[LevelRow] = []
        self.exercises: dict[str, Any] = {}
        self.workspaces: dict[str, Path] = {}
        self._proc: GradingServer | None = None  # the server while it grades
        self._server: GradingServer | None = None  # `dojo lab serve`, kept warm
        self._grading: Worker[int | None] | None = None
        self._attempts_read = False
        self._fetches = 0  # catalogue reads started (see `_loaded`)
        self._migrated = False
        self._prepare_timer: Timer | None = None
        self.prepare_pending: tuple[str, int] | None = None  # held now, prepared when it lasts
        self._prepared_for: tuple[str, int] | None = None
        self.seed: int | None = None  # the gradings' seed (None: random), set with S

    def compose(self) -> ComposeResult:
        # Short enough for 60 columns; every key is on the key bar and in F1.
        yield Static("Lab · g grade · s start · e edit · I interview", classes="titlebar")
        with Horizontal():
            with Vertical(id="lab-left"):
                yield OptionList(id="lab-list")
            with Vertical(id="lab-right"):
                yield Static("Loading exercises…", id="lab-detail")
                yield Static("", id="lab-clock")
                yield Static("", id="lab-results-title")
                yield ProgressBar(id="lab-progress", show_eta=False)
                yield DataTable(id="lab-results", cursor_type="row")
                yield RichLog(id="lab-log", wrap=True, markup=False, highlight=False, min_width=10)
        yield KeyBar()

    def on_mount(self) -> None:
        table = self.query_one("#lab-results", DataTable)
        # The verdict first: at 80 columns a narrow table must still say pass or FAIL (the
        # title names the level, so no level column).
        table.add_columns("result", "case", "time", "speed", "message")
        self.query_one(ProgressBar).display = False
        self.query_one("#lab-clock", Static).display = False
        self.set_interval(1.0, self._tick)
        self.reload()

    def _tick(self) -> None:
        """The interview clock of the selected exercise (hidden when none is running)."""
        clock = self.query_one("#lab-clock", Static)
        row = self.selected() if self.rows else None
        line = None
        if row is not None:
            with self.lab() as lab:
                line = lab.interview_clock(self.exercises[row.exercise])
        clock.display = line is not None
        if line is not None:
            clock.update(line)

    def reload(self) -> None:
        self._fetch()

    def _grading_now(self) -> bool:
        return self._grading is not None and self._grading.state in (
            WorkerState.PENDING, WorkerState.RUNNING)

    def _show_for(self, exercise: str, level: int) -> None:
        """Results and log on screen belong to (exercise, level) only: moving to another
        level clears them, unless a grading run is still writing its own (its title says so)."""
        if self.shown_for != (exercise, level) and not self._grading_now():
            self._clear_results(exercise, level)

    # -- catalogue -----------------------------------------------------------------------------

    def _fetch(self) -> None:
        """Read the catalogue again (numbered: only the newest read is shown)."""
        self._fetches += 1
        self._read_catalogue(self._fetches)

    @work(thread=True, exclusive=True, group="lab-list")
    def _read_catalogue(self, number: int) -> None:
        try:
            with self.lab() as lab:
                if not self._migrated:  # older releases' records, once per screen
                    lab.migrate()
                    self._migrated = True
                found = lab.catalogue()
        except Exception as exc:  # the lab package may be missing or broken: say so
            self.app.call_from_thread(self._unavailable, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._loaded, found, number)

    def _unavailable(self, why: str) -> None:
        if self.is_attached:
            self.query_one("#lab-detail", Static).update(
                f"[b yellow]The lab is not available:[/] {why}"
            )

    def _loaded(self, found: Catalogue, number: int | None = None) -> bool:
        """Show the catalogue read `number`; False when it was not shown. A read started
        before a grading ended can finish after the one started when it ended (a thread
        cannot be cancelled): its statuses are stale ("✓ passing" after a failed grading).
        One finishing after the screen closed has nothing to paint."""
        if not self.is_attached or (number is not None and number != self._fetches):
            return False
        self.exercises, self.workspaces = found.exercises, found.workspaces
        self.rows = rows = found.rows
        first, self._attempts_read = not self._attempts_read, True
        self.last_attempts = found.last
        table = self.query_one("#lab-results", DataTable)
        if first and self.shown_for is not None and not table.row_count and not self.log_lines:
            self._clear_results(*self.shown_for)  # the stored results, now that they are read
        listing = self.query_one("#lab-list", OptionList)
        keep = listing.highlighted
        listing.set_options(
            Option(_option_label(MARKS.get(r.status, "·"), r), id=f"{r.exercise}:{r.level}")
            for r in rows
        )
        if not rows:
            self._unavailable("no exercises found")
            return True
        if self.initial is not None:
            index = next((i for i, r in enumerate(rows) if r.exercise == self.initial), None)
            if index is None:
                self.notify(f"Exercise {self.initial} is not available yet.", severity="warning")
            keep, self.initial = index, None
        listing.highlighted = keep if keep is not None else 0
        self._describe()
        return True

    def selected(self) -> LevelRow | None:
        listing = self.query_one("#lab-list", OptionList)
        index = listing.highlighted
        return self.rows[index] if index is not None and index < len(self.rows) else None

    @on(OptionList.OptionHighlighted, "#lab-list")
    def _describe(self) -> None:
        row = self.selected()
        if row is None:
            return
        ex = self.exercises[row.exercise]
        level = ex.level(row.level)
        ws = self.workspaces.get(row.exercise)
        self._show_for(row.exercise, row.level)
        self._tick()
        # Where your file is first (shown nowhere else), then what changes as you work
        # (status, hints); the level's summary last, where a narrow panel may cut it. At 60x20
        # a passing level's status (4 rows) pushed the path out of the panel's 8; the status is
        # also in the results' title.
        lines = [
            f"[b]{ex.title}[/] ({ex.id}) · level {row.level}: {level.title}",
            f"Workspace: {_short_path(ws)}" if ws else
            "Workspace: none yet — s creates it from the stub",
            _status_line(row),
        ]
        with self.lab() as lab:
            shown, total, off = lab.hints(ex)
        if off:
            lines.append("Hints: off during the interview rehearsal")
        else:
            lines.append(f"Hints: {shown}/{total} revealed"
                         + (" (h for the next)" if shown < total else ""))
        lines.append(f"[dim]{escape(level.summary or ex.summary)}[/]")
        self.query_one("#lab-detail", Static).update("\n".join(lines))
        self._prepare_soon(row)

    def _prepare_soon(self, row: LevelRow) -> None:
        """A started torch lab that stays selected for a moment gets its grading child started
        (torch imported) in the background, so the first g answers in about a second. Moving on
        quickly through the list starts nothing."""
        if self._prepare_timer is not None:
            self._prepare_timer.stop()
            self._prepare_timer = None
        self.prepare_pending = None
        ex = self.exercises[row.exercise]
        key = (row.exercise, row.level)
        if key == self._prepared_for or not ex.needs_torch_for([row.level]):
            return
        with self.lab() as lab:
            started = lab.workspace_file(ex) is not None
        if started:
            self.prepare_pending = key
            self._prepare_timer = self.set_timer(PREPARE_AFTER_S, self.prepare_held)

    def prepare_held(self) -> None:
        """The selection was held for PREPARE_AFTER_S (the timer's callback; a test calls it
        to say the hold has lasted): prepare the level still pending."""
        key, self.prepare_pending = self.prepare_pending, None
        if key is not None:
            self._send_prepare(*key)

    @work(exclusive=True, group="lab-prepare")
    async def _send_prepare(self, exercise: str, level: int) -> None:
        if self._grading_now():
            return  # the server prepares the graded level's next child by itself
        server = await self._grader()
        try:
            await server.send(ServeRequest(exercise, level, prepare=True))
        except (BrokenPipeError, ConnectionResetError):
            return  # the next grading starts a new server
        self._prepared_for = (exercise, level)

    @on(OptionList.OptionSelected, "#lab-list")
    def _selected(self) -> None:
        self.action_grade()

    # -- actions -------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        running = self._grading_now()
        if action == "cancel":
            return running
        if action in ("grade", "start", "edit", "seed"):
            return not running or None
        if action == "next_level":
            return (not running and self._next_row() is not None) or None
        if action in ("interview", "restore"):
            row = self.selected() if self.rows else None
            if row is None or running:
                return None
            with self.lab() as lab:
                active = lab.interview(self.exercises[row.exercise]) is not None
            return active if action == "restore" else not active  # hidden when it does not apply
        return True

    def action_interview(self) -> None:
        row = self.selected()
        if row is None:
            return
        try:
            with self.lab() as lab:
                path, session = lab.start_interview(self.exercises[row.exercise], row.level)
        except OSError as exc:  # a read-only data folder: said, never a crash
            self._not_written(exc)
            return
        self.workspaces[row.exercise] = path
        self.write_log(f"Interview rehearsal: {row.exercise} level {row.level}, "
                       f"{plural(session.minutes, 'minute')}, hints off. Fresh stub: {path}")
        if session.moved_aside:
            self.write_log(f"Your file was moved aside to {session.moved_aside} (R restores it).")
        self._tick()
        self._describe()
        self.refresh_bindings()
        self._fetch()

    def action_restore(self) -> None:
        row = self.selected()
        if row is None:
            return
        try:  # a rebuild ended without a pass grades its lab card a lapse
            with self.lab() as lab:
                restored = lab.restore(self.exercises[row.exercise])
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            return
        except OSError as exc:
            self._not_written(exc)
            return
        if restored.kept is not None:
            self.write_log(f"The rehearsal's file is kept at {restored.kept}")
        self.write_log(f"Your file is back: {restored.path}")
        if restored.lapse:
            self.write_log(restored.lapse)
        self._tick()
        self._describe()  # "Hints: off during the interview rehearsal" no longer holds
        self.refresh_bindings()

    def _next_row(self) -> int | None:
        """Index of the level after the selected one, same exercise (None after the last)."""
        row = self.selected() if self.rows else None  # check_action runs before the list
        if row is None:
            return None
        return next((i for i, r in enumerate(self.rows)
                     if r.exercise == row.exercise and r.level == row.level + 1), None)

    def action_next_level(self) -> None:
        index = self._next_row()
        if index is None:
            return
        self.query_one("#lab-list", OptionList).highlighted = index
        self.action_start()

    def action_back(self) -> None:
        if self._grading is not None and self._grading.is_running:
            self.action_cancel()
        else:
            self.app.pop_screen()

    def action_hint(self) -> None:
        row = self.selected()
        if row is None:
            return
        try:
            with self.lab() as lab:
                hint, off = lab.next_hint(self.exercises[row.exercise])
        except OSError as exc:
            self._not_written(exc)
            return
        if off:
            self.notify(off.capitalize(), severity="warning")
            return
        if hint is None:
            self.notify("No more hints for this exercise.")
            return
        self.write_log(f"── hint {hint.number}/{hint.total} ──")
        from trainer.core.text import reflow

        for line in reflow(hint.text):  # the log wraps each paragraph at its own width
            self.write_log(line)
        self._describe()

    def action_statement(self) -> None:
        row = self.selected()
        if row is not None:
            ex = self.exercises[row.exercise]
            with self.lab() as lab:
                text = lab.statement(ex)
            self.app.push_screen(TaskScreen(ex.title, text))

    def _workspace(self, exercise: str, level: int) -> Path:
        """Copy the stub into the workspace (never overwriting the learner's work) and mark
        `level` started."""
        with self.lab() as lab:
            path, created = lab.start(self.exercises[exercise], level)
        self.workspaces[exercise] = path
        if created:
            self.write_log(f"Created {path} from the stub.")
        return path

    def _not_written(self, exc: OSError) -> None:
        """A lab file that could not be written (read-only data folder, full disk): say so."""
        self.notify(service.not_written(exc), severity="error", timeout=12)

    def action_start(self) -> None:
        row = self.selected()
        if row is None:
            return
        try:
            path = self._workspace(row.exercise, row.level)
        except OSError as exc:
            self._not_written(exc)
            return
        self.notify(f"{row.exercise} level {row.level} ({row.level_title}): {path}")
        self._fetch()

    def action_edit(self) -> None:
        row = self.selected()
        if row is None:
            return
        try:
            path = self._workspace(row.exercise, row.level)
        except OSError as exc:
            self._not_written(exc)
            return
        try:
            self.dojo.open_editor(self.dojo, path)
        except Exception as exc:  # not installed; suspend unsupported in this terminal
            text = str(exc)
            self.notify(text[:1].upper() + text[1:] if text.startswith("could not")
                        else f"Could not open the editor: {exc}", severity="error", timeout=10)
        self.refresh()
        self._fetch()  # the level is started now (and the file may have changed)

    def action_grade(self) -> None:
        row = self.selected()
        if row is None or (self._grading is not None and self._grading.is_running):
            return
        # nothing to grade (checked now: `dojo lab start` may have run since the list loaded)
        with self.lab() as lab:
            missing = lab.workspace_file(self.exercises[row.exercise]) is None
        if missing:
            self.notify(f"{row.exercise} has no workspace file yet: press s to create it from "
                        "the stub, then g to grade it.", severity="warning")
            return
        self._grading = self._grade(row.exercise, row.level)
        self.refresh_bindings()

    def action_seed(self) -> None:
        def chosen(seed: int | None) -> None:
            if seed is None:
                return
            self.seed = None if seed < 0 else seed
            self.notify(f"Gradings use seed {self.seed} (S changes it)." if self.seed is not
                        None else "Gradings use a random seed.")

        self.app.push_screen(SeedScreen(self.seed), chosen)

    def action_cancel(self) -> None:
        if self._grading is not None and self._grading.is_running:
            self._grading.cancel()
            self.refresh_bindings()

    # -- grading -------------------------------------------------------------------------------

    @work(exclusive=True, group="lab-grade")
    async def _grade(self, exercise: str, level: int) -> int | None:
        table = self.query_one("#lab-results", DataTable)
        bar = self.query_one(ProgressBar)
        self._clear_results(exercise, level, stored=False)
        self._signatures, self._not_run = {}, []
        host = self._host()
        on = f" on {host}" if host else ""
        self.query_one("#lab-results-title", Static).update(
            f"{exercise} L{level}: grading{on}…")
        bar.update(total=None, progress=0)
        bar.display = True
        self.last_summary = None
        seed = self.seed
        replay = f" --seed {seed}" if seed is not None else ""
        self.write_log(f"$ dojo lab grade {exercise} --level {level}{replay} --json"
                       + (f" --on {host}" if host else ""))
        self._proc = server = await self._grader()
        rc: int | None = None
        error = ""  # the server's "Error: …" sentence (a host that could not grade)
        try:
            await server.send(ServeRequest(exercise, level, seed=seed))
            while (reply := await server.reply()) is not None:
                if isinstance(reply, str):
                    if reply.strip():
                        self.write_log(reply)
                    if reply.startswith("Error: "):
                        error = reply.removeprefix("Error: ").strip()
                elif isinstance(reply, Served):
                    rc = reply.rc
                    break
                elif not isinstance(reply, PrepareReply):  # a prepare's answer says nothing here
                    self._on_event(reply, table, bar)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server is gone: its exit status says why, below
        except asyncio.CancelledError:
            self._server = None
            await server.stop()
            self.write_log("Cancelled: the grader was stopped.")
            self.notify("Grading cancelled.")
            bar.display = False
            raise
        finally:
            self._proc = None
            self.call_later(self.refresh_bindings)
        if rc is None:  # the server ended (crashed, killed): the next grading starts another
            rc = await server.wait()
            self._server = None
        self._graded(exercise, level, rc, error, bar)
        return rc

    def _graded(self, exercise: str, level: int, rc: int, error: str, bar: ProgressBar) -> None:
        """After a grading: say why nothing was graded (the server's sentence, or its exit
        status), or note a pass's lab card; refresh the pass/fail marks."""
        if self.last_summary is None and error:  # e.g. the host could not grade: its sentence
            self.query_one("#lab-results-title", Static).update(
                Text(f"{exercise} L{level}: not graded — {error}"))
            self.notify(error, severity="error", timeout=12)
            bar.display = False
        elif self.last_summary is None:  # nothing graded: the screen must not say it still is
            self.write_log(f"The grader exited with status {rc} without a summary.")
            self.query_one("#lab-results-title", Static).update(
                f"{exercise} L{level}: not graded (the grader stopped: see the log below)")
            bar.display = False
        elif self.last_summary.passed:
            self._card_note(exercise, level)
        if self._server is not None:
            self._prepared_for = (exercise, level)  # the server prepares its next grading
        self._fetch()  # refresh pass/fail marks from the attempts table

    def _host(self) -> str | None:
        """The lab_host setting (where `dojo lab serve` grades; None: here)."""
        services = self.dojo.services
        try:
            host = services.store.settings().lab_host if services is not None else None
        except Exception:
            return None
        return None if service.grades_here(host) else host

    def _summary(self, ev: Summary, title: Static, bar: ProgressBar) -> None:
        super()._summary(ev, title, bar)
        self._mark_graded(ev)

    def _mark_graded(self, ev: Summary) -> None:
        """The grading's verdict on each level it graded, in the list and the detail at once,
        wherever the cursor is (the catalogue read after the grading confirms it)."""
        listing = self.query_one("#lab-list", OptionList)
        levels = ev.levels if isinstance(ev.levels, dict) else {}  # data from a subprocess
        graded = {int(level): ok for level, ok in levels.items() if str(level).isdigit()}
        for i, row in enumerate(self.rows):
            if row.exercise == ev.exercise and row.level in graded:
                row.status = "passing" if graded[row.level] else "failing"
                listing.replace_option_prompt_at_index(i, _option_label(MARKS[row.status], row))
        selected = self.selected()
        if selected is not None and selected.exercise == ev.exercise and \
                selected.level in graded:
            self._describe()

    async def _grader(self) -> GradingServer:
        """This screen's grading server (`dojo lab serve`), started on first use and kept: its
        imports stay warm and it starts the next grading's child while you edit, so the first
        failure of a torch lab comes back in about a second, not after a torch import."""
        if self._server is None or not self._server.running:
            self._prepared_for = None
            self._server = await GradingServer.start(lab_command(self.dojo))
        return self._server

    async def on_unmount(self) -> None:
        """Stop the server: between gradings it holds nothing to save, and its prepared child
        dies with it (PR_SET_PDEATHSIG); a grading still running is killed too."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

def _status_line(row: LevelRow) -> str:
    """Status from the last grading, best figures from any: "failing in the last grading
    (best run 41/41 cases)" read as a contradiction when both were squeezed into one clause."""
    if row.status in ("passing", "failing") and row.best:
        when = "passes" if row.status == "passing" else "fails"
        return f"Status: [b]{row.status}[/] (the last grading {when}; {row.best})"
    return f"Status: [b]{row.status}[/]" + (f" ({row.best})" if row.best else "")


def _short_path(path: Path) -> str:
    """The workspace path with ~ for the home folder, so it fits the narrow detail panel (at
    60 columns the whole path wrapped out of its 9 rows and showed as an empty line)."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)
