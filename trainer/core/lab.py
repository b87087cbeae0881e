"""The lab as a service of the core: what the Lab screen and `dojo lab` share, held as one
`Lab` per command or screen action.

A `Lab` holds one open store: the lab state (`lab.workspace.LabState`: workspaces, hints, the
interview clock), the attempts (read once), the catalogue rows (one formatter for `dojo lab
list` and the screen), grade-and-record (the judge's result recorded with its lab cards and
recalls, the summary sent once it is stored) and the lab-card bookkeeping. Screens reach the lab
only through here (an import-linter contract), so they never read a grader event as a dict;
the `dojo lab serve` protocol is `trainer.core.lab_serve`.

At import time only the grader's event types and report helpers (re-exported for the screens:
light, no torch); the rest of the lab core is imported inside each method, so the TUI and
`dojo --help` never pay for it before the lab is used.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.grader.events import (
    CaseFailed,
    CasePassed,
    CasesSkipped,
    CaseStarted,
    Event,
    LevelSummary,
    Notice,
    RunStarted,
    Summary,
)
from lab.grader.report import (
    failure_signature,
    group_label,
    next_step,
    not_run_note,
    tidy_floats,
)

__all__ = [  # the grader's typed events and report helpers, for the screens
    "CaseFailed",
    "CasePassed",
    "CaseStarted",
    "CasesSkipped",
    "Catalogue",
    "Event",
    "Graded",
    "Lab",
    "LevelRow",
    "LevelSummary",
    "Notice",
    "Restored",
    "RunStarted",
    "Summary",
    "failure_signature",
    "group_label",
    "next_step",
    "not_run_note",
    "tidy_floats",
]

if TYPE_CHECKING:
    from lab.exercises import Exercise
    from lab.grader.plan import GradeOptions
    from lab.grader.results import GradeResult
    from lab.workspace import Hint, Interview
    from trainer.core.attempts import LevelStanding, Recorder

# -- the catalogue ---------------------------------------------------------------------------

@dataclass
class LevelRow:
    """One level as `dojo lab list` and the Lab screen show it: its status from the last
    grading, its best figures (`trainer.core.attempts.describe`), when its lab card comes back,
    its gate."""

    exercise: str
    title: str
    level: int
    level_title: str
    status: str  # not started | started | failing | passing | unavailable here: <why>
    best: str  # "best 38/38 cases, 3 attempts, best median_ratio 1.02 (cpu)" or ""
    back: str = ""  # "rebuild due" / "rebuild 2026-03-08" or ""
    gate: str = ""  # "median_ratio_max 1.5" or ""


@dataclass
class Catalogue:
    """Every exercise and level, the workspace files that exist, the newest stored attempt
    per level (oldest first in the table: the newest wins)."""

    exercises: dict[str, Exercise]
    rows: list[LevelRow]
    workspaces: dict[str, Path]
    last: dict[tuple[str, int], Any]


def not_written(exc: OSError) -> str:
    """What to say about a lab file that could not be written (read-only folder, full disk)."""
    from lab.workspace import ReadOnlyLabError

    return str(exc.strerror) if isinstance(exc, ReadOnlyLabError) else (
        f"could not write {exc.filename or 'a lab file'}: {exc.strerror or exc}")


def new_exercise(exercise_id: str, question: str | None = None) -> list[Path]:
    """Scaffold a new exercise (`lab.exercises.scaffold`): every piece of the checklist, one
    working example level whose cases test `question` (default: the bank's first question).
    ScaffoldError says why an id is refused, ValueError names a question not in the bank."""
    from lab.exercises.scaffold import scaffold
    from trainer.core.bank import load_study_bank

    ids = [q.id for q in load_study_bank().questions]
    if question is not None and question not in ids:
        raise ValueError(f"{question!r} is not a question of the bank")
    return scaffold(exercise_id, question or ids[0])


def first_pass(session: Interview) -> str:
    """" · first pass at 3:07" once the rehearsal's level passed, else ""."""
    first = session.first_pass_s
    return f" · first pass at {int(first) // 60}:{int(first) % 60:02d}" if first else ""


# -- grade and record ------------------------------------------------------------------------

def grades_here(host: str | None) -> bool:
    """Whether a lab_host setting means grading on this machine (unset or "local")."""
    from trainer.core.remote import is_local

    return is_local(host)


@dataclass
class Graded:
    """One grading, recorded: whether it passed, the interview rehearsal it counted in (after
    the pass, when it passed the rehearsal's level), the recorder with its card results, and
    the judge's result."""

    passed: bool
    session: Interview | None
    recorder: Recorder
    result: GradeResult


class _HeldSummary:
    """An event sink that passes every event on but the closing `Summary`, held until the
    attempt is recorded, so the summary sent says whether it was stored."""

    def __init__(self, sink: Callable[[Event], None] | None) -> None:
        self.sink = sink
        self.summary: Summary | None = None

    def __call__(self, event: Event) -> None:
        if isinstance(event, Summary):
            self.summary = event
        elif self.sink is not None:
            self.sink(event)

    def release(self, result: GradeResult, stored: bool, store_error: str) -> None:
        if self.summary is None:
            return
        summary = dataclasses.replace(self.summary, stored=stored, store_error=store_error)
        result.events[result.events.index(self.summary)] = summary
        if self.sink is not None:
            self.sink(summary)


def expected_cache_dir() -> Path:
    """Where gradings keep the reference's answers of fixed cases (`lab.grader.expected_cache`):
    in the data folder, which the learner's sandbox never writes."""
    from trainer.core.store import data_dir

    return data_dir() / "cache" / "expected"


def grade_recorded(ex: Exercise, path: Path, options: GradeOptions,
                   recorder: Recorder) -> GradeResult:
    """Grade (the judge: `lab.grader.runner.grade`), then record the result through `recorder`
    (attempts, lab cards, recalls: one transaction); the closing summary event goes to
    `options.emit` after the recording, saying whether it was stored."""
    from lab.grader.runner import grade

    held = _HeldSummary(options.emit)
    result = grade(ex, path, dataclasses.replace(options, emit=held))
    stored, store_error = recorder.record(result)
    held.release(result, stored, store_error)
    return result


@dataclass
class Restored:
    """An ended rehearsal: the learner's file back, the rehearsal's file kept, and the lapse
    note when a rebuild ended without a pass ("" when none)."""

    path: Path
    kept: Path | None
    lapse: str


# -- the lab, held ---------------------------------------------------------------------------

@dataclass
class Lab:
    """The lab through one open store (`store=None`: the database could not be opened, `error`
    says why; the lab still lists, starts and grades, and says it could not store).

    `Lab.open()` is a command's; a screen holds one over the app's store. `now` pins the clock
    (the app's `Services.now`)."""

    store: Any
    error: Exception | None = None
    now: dt.datetime | None = None
    _attempts: list[Any] | None = field(default=None, init=False, repr=False)
    _read: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        from lab.workspace import LabState

        self.state = LabState(self.store, self.error)

    @classmethod
    @contextmanager
    def open(cls, on_read_only: Callable[[str], None] | None = None) -> Iterator[Lab]:
        """Open the learner's database once for a command (read-only when it cannot be
        written: `on_read_only` gets why) and bring older releases' lab records in."""
        from scheduler.errors import StoreError
        from trainer.core.store import open_store

        try:
            store = open_store(browse=True, on_read_only=on_read_only)
        except (StoreError, OSError) as exc:
            yield cls(None, exc)
            return
        try:
            lab = cls(store)
            lab.migrate()
            yield lab
        finally:
            store.close()

    def migrate(self) -> None:
        """Older releases' workspace records into the database (`LabState.migrate`), once."""
        from lab.exercises import discover

        self.state.migrate(discover())

    # -- the catalogue --
    def exercise(self, exercise_id: str) -> Exercise:
        """The exercise named `exercise_id` (ExerciseError names the known ones)."""
        from lab.exercises import get

        return get(exercise_id)

    def refresh(self) -> None:
        """Forget what was read (the lab state, the attempts): another process (the app, a
        second terminal) may have changed them since."""
        from lab.workspace import LabState

        self.state = LabState(self.store, self.error)
        self._read = False

    def attempts(self) -> list[Any] | None:
        """Every stored attempt (oldest first), read once; None when the store cannot be
        read."""
        if not self._read:
            self._read = True
            try:
                self._attempts = list(self.store.lab_attempts()) if self.store else None
            except Exception:
                self._attempts = None
        return self._attempts

    def level_states(self, ex: Exercise) -> dict[int, tuple[str, LevelStanding]]:
        """(status, summary) per level: "passing"/"failing" from the attempts table, else
        "started" when the learner started that level, else "not started"."""
        from trainer.core.attempts import LevelStanding, level_summaries

        summaries = level_summaries(a for a in self.attempts() or [] if a.exercise == ex.id)
        started = (set(self.state.levels_started(ex))
                   if self.state.solution_path(ex).exists() else set())
        out = {}
        for level in ex.level_numbers:
            summary = summaries.get(level, LevelStanding("not graded"))
            status = summary.status if summary.attempts else (
                "started" if level in started else "not started")
            out[level] = (status, summary)
        return out

    def rows(self, exercises: list[Exercise]) -> list[LevelRow]:
        """Every level of `exercises`, as `dojo lab list` and the screen show it."""
        from trainer.core.attempts import describe

        back = self.rebuild_days()
        rows = []
        for ex in exercises:
            states = self.level_states(ex)
            missing = ex.unavailable()
            for lvl in ex.levels:
                status, summary = states[lvl.number]
                figures = describe(summary)
                if missing:
                    status, figures = f"unavailable here: it {missing}", ""
                rows.append(LevelRow(ex.id, ex.title, lvl.number, lvl.title, status, figures,
                                     back.get((ex.id, lvl.number), ""), lvl.gate_text()))
        return rows

    def catalogue(self) -> Catalogue:
        """Read the catalogue (exercise folders, workspaces, the attempts table); raises what
        the lab package raises when it is missing or broken."""
        from lab.exercises import discover

        exercises = discover()
        last = {(a.exercise, a.level): a for a in self.attempts() or []}  # newest wins
        workspaces = {ex.id: path for ex in exercises
                      if (path := self.state.solution_path(ex)).exists()}
        return Catalogue({ex.id: ex for ex in exercises}, self.rows(exercises), workspaces, last)

    def today(self) -> dt.date:
        from scheduler.days import utc_now

        return self.store.study_day(self.now or utc_now())  # type: ignore[no-any-return]

    def rebuild_days(self) -> dict[tuple[str, int], str]:
        """(exercise, level) -> "rebuild due" / "rebuild 2026-03-08", for levels with a lab
        card (empty when the database cannot be read: the list never depends on it)."""
        try:
            today = self.today()
            cards = self.store.lab_cards()
        except Exception:
            return {}
        return {(c.exercise, c.level): "rebuild due" if c.due <= today
                else f"rebuild {c.due.isoformat()}" for c in cards if c.due is not None}

    # -- the workspace --
    def solution_file(self, exercise_id: str) -> Path:
        """Where the learner's file for the exercise named `exercise_id` is (or will be)."""
        return self.state.solution_path(self.exercise(exercise_id))

    def workspace_file(self, ex: Exercise) -> Path | None:
        """The learner's file for `ex` when it exists (checked now: `dojo lab start` may have
        run since the catalogue was read)."""
        path = self.state.solution_path(ex)
        return path if path.is_file() else None

    def start(self, ex: Exercise, level: int, workspace: Path | None = None
              ) -> tuple[Path, bool]:
        """Copy the stub into the workspace (never over the learner's work), mark `level`
        started: (the file, whether it was created now)."""
        return self.state.start(ex, workspace, level)

    def start_interview(self, ex: Exercise, level: int, minutes: int | None = None,
                        workspace: Path | None = None) -> tuple[Path, Interview]:
        """Start an interview rehearsal of `level`: the learner's file aside, a fresh stub."""
        from lab.workspace import DEFAULT_INTERVIEW_MINUTES

        return self.state.start_interview(ex, level, minutes or DEFAULT_INTERVIEW_MINUTES,
                                          workspace)

    def interview(self, ex: Exercise) -> Interview | None:
        """The interview rehearsal running for `ex`, if any."""
        return self.state.interview(ex)

    def interview_clock(self, ex: Exercise) -> str | None:
        """The Lab screen's clock line for `ex`'s running rehearsal (None when none runs)."""
        session = self.interview(ex)
        if session is None:
            return None
        return (f"⏱ Interview {ex.id} L{session.level}: {session.clock()} · "
                f"gradings {session.gradings}{first_pass(session)} · hints off · "
                "R restores your file")

    def restore(self, ex: Exercise) -> Restored:
        """End `ex`'s rehearsal and put the learner's file back; a rebuild ended without a
        pass grades its lab card a lapse. Raises ValueError when none runs, OSError when a file
        cannot be written."""
        from lab.rebuild import comes_back
        from lab.rebuild import restore as end_rehearsal

        path, kept, lapse = end_rehearsal(self.state, ex)
        note = ""
        if lapse is not None and lapse.graded:
            note = (f"The rebuild ended without a pass: a lapse (quality {lapse.quality}); "
                    f"{comes_back(lapse.card, self.today())}.")
        return Restored(path, kept, note)

    def hints(self, ex: Exercise) -> tuple[int, int, bool]:
        """(hints revealed, hints in all, whether hints are off for a rehearsal)."""
        return (len(self.state.hints_shown(ex)), len(ex.hints()),
                self.interview(ex) is not None)

    def next_hint(self, ex: Exercise) -> tuple[Hint | None, str]:
        """Reveal the next hint: (the hint or None when all are shown, "") or (None, why hints
        are off) during an interview rehearsal."""
        from lab.workspace import HintsOff

        try:
            return self.state.next_hint(ex), ""
        except HintsOff as exc:
            return None, str(exc)

    def statement(self, ex: Exercise) -> str:
        """The exercise statement (without its hints during an interview rehearsal)."""
        return self.state.statement(ex)

    # -- grade and record --
    def grading_host(self, on: str | None) -> str | None:
        """Where to grade: `--on HOST` ("local": here), else the lab_host setting of this
        store (`trainer.core.remote.grading_host`). ValueError for a bad host name."""
        from trainer.core.remote import grading_host

        return grading_host(on, self.store)

    def grade(self, ex: Exercise, path: Path, levels: list[int] | None, device: str,
              seed: int | None, emit: Callable[[Event], None] | None,
              models: dict[str, str] | None = None, prepared: Any = None,
              host: Any = None, *, record: bool = False) -> Graded:
        """Run the grader on `path`, recording the attempt (and the lab cards its passes
        create or grade) in this store when `path` is the workspace file or `record` asks for
        it (a scratch file graded with --file is not an attempt of the level), counting it in
        the interview rehearsal when it grades the rehearsal's file; `prepared`: a child
        started ahead by `lab.grader.runner.prepare`; `host`: an SSH host name or an open
        `trainer.core.remote.RemoteSession` to grade on instead of here (raises `RemoteError`,
        nothing recorded or counted, when that fails)."""
        from lab.grader.plan import GradeOptions
        from lab.workspace import interview_metrics
        from trainer.core.attempts import Recorder, Unrecorded

        self.refresh()
        state = self.state
        rehearsal = path.resolve() == state.solution_path(ex).resolve()
        levels_counted = levels or ex.level_numbers
        recorder = Recorder(self.store, self.error) if rehearsal or record else Unrecorded(
            f"{path.name} is not your workspace file, so this grading is not an attempt of "
            "the level (--record counts it)")
        emit = self._next_step_checked(ex, emit)
        if host is not None:
            from trainer.core.remote import RemoteSession, grade_remote

            link = host if isinstance(host, RemoteSession) else RemoteSession(host)
            if link.hello is None:
                link.open()  # a host that cannot grade is not a grading: nothing counted
            session = state.count_grading(ex, levels_counted) if rehearsal else None
            try:
                result = grade_remote(link.host, ex, path, levels, device, seed,
                                      emit or (lambda event: None), recorder,
                                      interview_metrics(session) if session else None, link)
            finally:
                if link is not host:
                    link.close()
        else:
            session = state.count_grading(ex, levels_counted) if rehearsal else None
            result = grade_recorded(ex, path, GradeOptions(
                levels=levels, device=device, seed=seed, emit=emit, models=models,
                attempt_metrics=interview_metrics(session) if session else None,
                prepared=prepared, expected_cache=expected_cache_dir()), recorder)
        self._read = False  # the attempts table has a new row
        if session is not None and any(lvl.passed for lvl in result.levels
                                       if lvl.level == session.level):
            session = state.passed_interview(ex, session)
        return Graded(result.passed, session, recorder, result)

    def _next_step_checked(self, ex: Exercise, emit: Callable[[Event], None] | None
                           ) -> Callable[[Event], None] | None:
        """`emit`, with the summary's "next: Level N … `dojo lab start`" pointing at the
        first later level not passed yet, and left out during an interview rehearsal (its
        level is the one to work on) or when every later level has passed."""
        if emit is None:
            return None
        import dataclasses

        sink = emit

        def checked(event: Event) -> None:
            if isinstance(event, Summary) and isinstance(event.next_level, dict):
                event = dataclasses.replace(event,
                                            next_level=self._next_open(ex, event.next_level))
            sink(event)

        return checked

    def _next_open(self, ex: Exercise, nxt: dict[str, Any]) -> dict[str, Any] | None:
        if self.state.interview(ex) is not None:
            return None
        self._read = False  # this grading's attempt is in the table now
        passed = {a.level for a in self.attempts() or []
                  if a.exercise == ex.id and a.passed}
        number = nxt.get("number")
        later = [n for n in ex.level_numbers
                 if isinstance(number, int) and n >= number and n not in passed]
        if not later:
            return None
        return {"number": later[0], "title": ex.level(later[0]).title,
                "command": f"dojo lab start {ex.id} --level {later[0]}"}

    def card_lines(self, ex: Exercise, graded: Graded) -> list[str]:
        """What the grading's passes did to their lab cards ("… is now a lab card (quality
        5): …", "Rebuild of … graded 4: …"), then the recall lines."""
        from lab.concepts import recall_lines
        from lab.rebuild import comes_back

        recorder, session = graded.recorder, graded.session
        lines = list(recall_lines(recorder.recalls))
        for r in recorder.card_results:
            if r.card is None:
                continue
            name = f"{r.card.exercise} L{r.card.level}"
            back = comes_back(r.card, self.today())
            if r.created:
                lines.append(f"{name} is now a lab card (quality {r.quality}): {back}.")
            elif r.graded:
                lines.append(f"Rebuild of {name} graded {r.quality}: {back}.")
            elif session is not None and session.rebuild and session.level == r.card.level:
                lines.append(f"Rebuild of {name} passed; not graded ({r.why_not}): {back}.")
        if session is not None and session.rebuild and any(
                r.card is not None and r.card.level == session.level
                for r in recorder.card_results):
            lines.append(f"Your own file is kept: `dojo lab restore {ex.id}` brings it back.")
        return lines

    def card_note(self, exercise: str, level: int) -> str | None:
        """After a pass in the TUI: when the level's lab card comes back (None without a card
        or when the store cannot be read: the note is a courtesy, the grading is stored)."""
        from lab.rebuild import comes_back

        try:
            card = self.store.lab_card(exercise, level)
            today = self.today()
        except Exception:
            return None
        back = comes_back(card, today)
        return f"{exercise} L{level} comes back as a lab card: {back}." if back else None
