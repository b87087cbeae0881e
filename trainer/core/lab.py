"""The lab as a service of the core: what the Lab screen and `dojo lab` share.

The catalogue (exercises, their levels with status and best figures), grade-and-record (the
grader run, the interview rehearsal it counts in, what the passes did to their lab cards), the
interview and lab-card bookkeeping, and a typed client for `dojo lab serve`. Screens reach the
lab only through here (an import-linter contract), so they never read a grader event as a dict.

The `dojo lab serve` protocol (the TUI's warm grading server; `GradingServer` is its client):

* Requests, one JSON object a line on the server's stdin (`ServeRequest`):
  ``{"exercise": ID, "level": N}`` grades (level may be null: every level; an optional
  ``"seed": S`` replays an earlier run's hidden cases, as `dojo lab grade --seed`), and
  ``{"exercise": ID, "level": N, "prepare": true}`` only starts the sandboxed child that grading
  would use (torch imported), so the next grading answers in about a second.
* Replies, one JSON object a line on its stdout: a grading is answered with the `--json` events
  of `dojo lab grade` (`lab.grader.events`, read back typed with `from_dict`) and closed by
  ``{"event": "served", "rc": 0|1|2}`` (`Served`: the exit status `dojo lab grade` would have
  had; 2 for a bad request, whose reason goes to stderr). A prepare request is answered by
  ``{"event": "prepared", "ready": bool, "kept": bool, "seconds": float}`` (`Prepared`), or by
  nothing when the exercise has no workspace file yet. Any other line (the server's stderr is
  merged into stdout by the client) is plain text for the log.
* The server keeps its imports warm between requests and, after a grading, starts the child for
  the next one by itself; closing its stdin ends it, and killing its process group ends the
  children it started.

At import time only the grader's event types and report helpers (re-exported for the screens:
light, no torch); the rest of the lab core is imported inside each function, so the TUI and
`dojo --help` never pay for it before the lab is used.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

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
    "GradingServer",
    "LevelRow",
    "LevelSummary",
    "Notice",
    "Prepared",
    "RunStarted",
    "ServeRequest",
    "Served",
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
    from trainer.core.attempts import Recorder
    from trainer.core.services import Services


# -- the serve protocol ----------------------------------------------------------------------

@dataclass(frozen=True)
class ServeRequest:
    """One request to `dojo lab serve`: grade `exercise` (at `level`), or only prepare it."""

    exercise: str
    level: int | None = None
    prepare: bool = False
    seed: int | None = None  # the grading's seed (None: a random one)

    def to_json(self) -> str:
        data: dict[str, Any] = {"exercise": self.exercise, "level": self.level}
        if self.prepare:
            data["prepare"] = True
        if self.seed is not None:
            data["seed"] = self.seed
        return json.dumps(data)

    @classmethod
    def parse(cls, line: str) -> ServeRequest | None:
        """The request on one stdin line; None when it is not one."""
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                return None
            level, seed = data.get("level"), data.get("seed")
        except ValueError:
            return None
        if not isinstance(data.get("exercise"), str) or not all(
                x is None or (isinstance(x, int) and not isinstance(x, bool))
                for x in (level, seed)):
            return None
        return cls(data["exercise"], level, bool(data.get("prepare")), seed)


@dataclass(frozen=True)
class Served:
    """The end of a grading's replies: the exit status `dojo lab grade` would have had."""

    EVENT: ClassVar[str] = "served"
    rc: int

    def to_json(self) -> str:
        return json.dumps({"event": self.EVENT, "rc": self.rc})


@dataclass(frozen=True)
class Prepared:
    """The answer to a prepare request: whether the child is warm, and whether the server
    kept the one it had (`seconds` the request took)."""

    EVENT: ClassVar[str] = "prepared"
    ready: bool
    kept: bool
    seconds: float = 0.0

    def to_json(self) -> str:
        return json.dumps({"event": self.EVENT, "ready": self.ready, "kept": self.kept,
                           "seconds": self.seconds})


def parse_reply(line: str) -> Event | Served | Prepared | str | None:
    """One line of the server's output: a typed reply, the line itself when it is plain text,
    or None for a protocol line this version does not know (ignored, as the format says)."""
    if not line.startswith("{"):
        return line
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return line
    if not isinstance(data, dict) or "event" not in data:
        return line
    if data["event"] == Served.EVENT:
        rc = data.get("rc", 1)
        return Served(rc if isinstance(rc, int) else 1)
    if data["event"] == Prepared.EVENT:
        return Prepared(bool(data.get("ready")), bool(data.get("kept")),
                        float(data.get("seconds") or 0.0))
    from lab.grader.events import from_dict

    return from_dict(data)


class GradingServer:
    """A running `dojo lab serve` (started with `start`): send requests, read typed replies.

    Its stderr is merged into its stdout, and it runs in its own session so `stop` kills every
    child it started (they run learner code)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls, command: list[str]) -> GradingServer:
        """Start `command` (the lab CLI, e.g. `python -m trainer lab`) with `serve`."""
        process = await asyncio.create_subprocess_exec(
            *command, "serve",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        return cls(process)

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    async def send(self, request: ServeRequest) -> None:
        """Write one request; BrokenPipeError/ConnectionResetError when the server is gone."""
        stdin = self.process.stdin
        if stdin is None:
            raise BrokenPipeError("the grading server has no stdin")
        stdin.write((request.to_json() + "\n").encode())
        await stdin.drain()

    async def reply(self) -> Event | Served | Prepared | str | None:
        """The next reply (a typed one, or a plain line of text); None once the server's
        output has ended. Protocol lines this version does not know are skipped."""
        assert self.process.stdout is not None
        while True:
            raw = await self.process.stdout.readline()
            if not raw:
                return None
            parsed = parse_reply(raw.decode(errors="replace").rstrip("\n"))
            if parsed is not None:
                return parsed

    async def wait(self) -> int:
        return await self.process.wait()

    async def stop(self) -> None:
        """Kill the server and everything it started, and wait for it, its pipes closed."""
        proc = self.process
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                proc.kill()
        await proc.wait()


# -- the catalogue ---------------------------------------------------------------------------

@dataclass
class LevelRow:
    """One level in the catalogue: its status from the last grading, its best figures."""

    exercise: str
    title: str
    level: int
    level_title: str
    status: str  # not started | started | failing | passing | unavailable here: <why>
    best: str


@dataclass
class Catalogue:
    """Every exercise and level, the workspace files that exist, the newest stored attempt
    per level (oldest first in the table: the newest wins)."""

    exercises: dict[str, Exercise]
    rows: list[LevelRow]
    workspaces: dict[str, Path]
    last: dict[tuple[str, int], Any]


def catalogue() -> Catalogue:
    """Read the catalogue (exercise folders, workspaces, the attempts table); raises what the
    lab package raises when it is missing or broken."""
    from lab.exercises import discover
    from lab.workspace import solution_path
    from questions.wording import noun
    from trainer.core.attempts import Recorder, level_states

    exercises = discover()
    rows: list[LevelRow] = []
    workspaces: dict[str, Path] = {}
    last: dict[tuple[str, int], Any] = {}
    for attempt in Recorder().attempts() or []:  # one read; oldest first: newest wins
        last[(attempt.exercise, attempt.level)] = attempt
    for ex in exercises:
        path = solution_path(ex)
        if path.exists():
            workspaces[ex.id] = path
        states = level_states(ex)  # the attempts table, like `dojo lab list` and Stats
        missing = ex.unavailable()
        for lvl in ex.levels:
            status, summary = states[lvl.number]
            ratio = summary.best_metrics.get("median_ratio")
            cases = (f"{summary.best_passed_cases}/{summary.cases} {noun(summary.cases, 'case')}"
                     if summary.cases else "")
            figures = ", ".join(x for x in (cases, f"{ratio[0]:.2f}× ref" if ratio else "") if x)
            if missing:
                status, figures = f"unavailable here: it {missing}", ""
            rows.append(LevelRow(ex.id, ex.title, lvl.number, lvl.title, status, figures))
    return Catalogue({ex.id: ex for ex in exercises}, rows, workspaces, last)


def workspace_file(exercise: Exercise) -> Path | None:
    """The learner's file for `exercise` when it exists (checked now: `dojo lab start` may have
    run since the catalogue was read)."""
    from lab.workspace import solution_path

    path = solution_path(exercise)
    return path if path.is_file() else None


def solution_file(exercise_id: str) -> Path:
    """Where the learner's file for the exercise named `exercise_id` is (or will be)."""
    from lab.exercises import get
    from lab.workspace import solution_path

    return solution_path(get(exercise_id))


def not_written(exc: OSError) -> str:
    """What to say about a lab file that could not be written (read-only folder, full disk)."""
    from lab.workspace import ReadOnlyLabError

    return str(exc.strerror) if isinstance(exc, ReadOnlyLabError) else (
        f"could not write {exc.filename or 'a lab file'}: {exc.strerror or exc}")


# -- grade and record ------------------------------------------------------------------------

def grades_here(host: str | None) -> bool:
    """Whether a lab_host setting means grading on this machine (unset or "local")."""
    from trainer.core.remote import is_local

    return is_local(host)


@dataclass
class Graded:
    """One grading, recorded: whether it passed, the interview rehearsal it counted in (after
    the pass, when it passed the rehearsal's level) and the recorder with its card results."""

    passed: bool
    session: Interview | None
    recorder: Recorder


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
        import dataclasses

        summary = dataclasses.replace(self.summary, stored=stored, store_error=store_error)
        result.events[result.events.index(self.summary)] = summary
        if self.sink is not None:
            self.sink(summary)


def grade_recorded(ex: Exercise, path: Path, options: GradeOptions,
                   recorder: Recorder) -> GradeResult:
    """Grade (the judge: `lab.grader.runner.grade`), then record the result through `recorder`
    (attempts, lab cards, recalls: one transaction); the closing summary event goes to
    `options.emit` after the recording, saying whether it was stored."""
    import dataclasses

    from lab.grader.runner import grade

    held = _HeldSummary(options.emit)
    result = grade(ex, path, dataclasses.replace(options, emit=held))
    stored, store_error = recorder.record(result)
    held.release(result, stored, store_error)
    return result


def _next_step_checked(ex: Exercise, emit: Callable[[Event], None]
                       ) -> Callable[[Event], None]:
    """`emit`, with the summary's "next: Level N … `dojo lab start`" pointing at the first
    later level not passed yet, and left out during an interview rehearsal (its level is the
    one to work on) or when every later level has passed."""
    import dataclasses

    def checked(event: Event) -> None:
        if isinstance(event, Summary) and isinstance(event.next_level, dict):
            event = dataclasses.replace(event, next_level=_next_open(ex, event.next_level))
        emit(event)

    return checked


def _next_open(ex: Exercise, nxt: dict[str, Any]) -> dict[str, Any] | None:
    from lab.workspace import interview as running
    from trainer.core.attempts import Recorder

    if running(ex) is not None:
        return None
    passed = {a.level for a in Recorder().attempts(ex.id) or [] if a.passed}
    number = nxt.get("number")
    later = [n for n in ex.level_numbers
             if isinstance(number, int) and n >= number and n not in passed]
    if not later:
        return None
    return {"number": later[0], "title": ex.level(later[0]).title,
            "command": f"dojo lab start {ex.id} --level {later[0]}"}


def grade_and_record(
    ex: Exercise, path: Path, levels: list[int] | None, device: str, seed: int | None,
    emit: Callable[[Event], None], models: dict[str, str] | None = None, prepared: Any = None,
    host: Any = None, *, record: bool = False,
) -> Graded:
    """Run the grader on `path`, recording the attempt (and the lab cards its passes create or
    grade) when `path` is the workspace file or `record` asks for it (a scratch file graded
    with --file is not an attempt of the level), counting it in the interview rehearsal when
    it grades the rehearsal's file;
    `prepared`: a child started ahead by `lab.grader.runner.prepare`; `host`: an SSH host name
    or an open `trainer.core.remote.RemoteSession` to grade on instead of here (raises
    `RemoteError`, nothing recorded or counted, when that fails)."""
    from lab.grader.plan import GradeOptions
    from lab.workspace import count_grading, interview_metrics, passed_interview, solution_path
    from trainer.core.attempts import Recorder, Unrecorded

    emit = _next_step_checked(ex, emit)
    rehearsal = path.resolve() == solution_path(ex).resolve()
    session = (count_grading(ex, levels or ex.level_numbers)
               if rehearsal and host is None else None)
    recorder = Recorder() if rehearsal or record else Unrecorded(
        f"{path.name} is not your workspace file, so this grading is not an attempt of the "
        "level (--record counts it)")
    if host is not None:
        from trainer.core.remote import RemoteSession, grade_remote

        link = host if isinstance(host, RemoteSession) else RemoteSession(host)
        if link.hello is None:
            link.open()  # a host that cannot grade is not a grading: nothing counted
        session = count_grading(ex, levels or ex.level_numbers) if rehearsal else None
        try:
            result = grade_remote(link.host, ex, path, levels, device, seed, emit, recorder,
                                  interview_metrics(session) if session else None, link)
        finally:
            if link is not host:
                link.close()
    else:
        result = grade_recorded(ex, path, GradeOptions(
            levels=levels, device=device, seed=seed, emit=emit, models=models,
            attempt_metrics=interview_metrics(session) if session else None,
            prepared=prepared), recorder)
    if session is not None and any(lvl.passed for lvl in result.levels
                                   if lvl.level == session.level):
        session = passed_interview(ex, session)
    return Graded(result.passed, session, recorder)


def first_pass(session: Interview) -> str:
    """" · first pass at 3:07" once the rehearsal's level passed, else ""."""
    first = session.first_pass_s
    return f" · first pass at {int(first) // 60}:{int(first) % 60:02d}" if first else ""


def card_lines(ex: Exercise, graded: Graded, today: Callable[[], Any]) -> list[str]:
    """What the grading's passes did to their lab cards ("… is now a lab card (quality 5): …",
    "Rebuild of … graded 4: …"), then the recall lines; `today` reads the study day."""
    from lab.concepts import recall_lines
    from lab.rebuild import comes_back

    recorder, session = graded.recorder, graded.session
    lines = list(recall_lines(recorder.recalls))
    for r in recorder.card_results:
        if r.card is None:
            continue
        name = f"{r.card.exercise} L{r.card.level}"
        back = comes_back(r.card, today())
        if r.created:
            lines.append(f"{name} is now a lab card (quality {r.quality}): {back}.")
        elif r.graded:
            lines.append(f"Rebuild of {name} graded {r.quality}: {back}.")
        elif session is not None and session.rebuild and session.level == r.card.level:
            lines.append(f"Rebuild of {name} passed; not graded ({r.why_not}): {back}.")
    if session is not None and session.rebuild and any(
            r.card is not None and r.card.level == session.level for r in recorder.card_results):
        lines.append(f"Your own file is kept: `dojo lab restore {ex.id}` brings it back.")
    return lines


def card_note(services: Services, exercise: str, level: int) -> str | None:
    """After a pass in the TUI: when the level's lab card comes back (None without a card or
    when the store cannot be read: the note is a courtesy, the grading itself is stored)."""
    from lab.rebuild import comes_back

    try:
        card = services.store.lab_card(exercise, level)
        today = services.day()
    except Exception:
        return None
    back = comes_back(card, today)
    return f"{exercise} L{level} comes back as a lab card: {back}." if back else None


# -- interview rehearsal, hints, lab cards ---------------------------------------------------

def rebuild_days() -> dict[tuple[str, int], str]:
    """(exercise, level) -> "rebuild due" / "rebuild 2026-03-08", for levels with a lab card
    (empty when the database cannot be read: the list never depends on it)."""
    try:
        from scheduler.days import utc_now
        from trainer.core.attempts import default_reader

        with default_reader() as store:
            today = store.study_day(utc_now())
            cards = store.lab_cards()
    except Exception:
        return {}
    return {(c.exercise, c.level): "rebuild due" if c.due is not None and c.due <= today
            else f"rebuild {c.due.isoformat()}" for c in cards if c.due is not None}


def interview(ex: Exercise) -> Interview | None:
    """The interview rehearsal running for `ex`, if any."""
    from lab.workspace import interview as running

    return running(ex)


def interview_clock(ex: Exercise) -> str | None:
    """The Lab screen's clock line for `ex`'s running rehearsal (None when none runs)."""
    session = interview(ex)
    if session is None:
        return None
    first = session.first_pass_s
    passed = (f" · first pass at {int(first) // 60}:{int(first) % 60:02d}"
              if first is not None else "")
    return (f"⏱ Interview {ex.id} L{session.level}: {session.clock()} · "
            f"gradings {session.gradings}{passed} · hints off · R restores your file")


@dataclass
class Restored:
    """An ended rehearsal: the learner's file back, the rehearsal's file kept, and the lapse
    note when a rebuild ended without a pass ("" when none)."""

    path: Path
    kept: Path | None
    lapse: str


def restore(ex: Exercise, services: Services | None) -> Restored:
    """End `ex`'s rehearsal and put the learner's file back; a rebuild ended without a pass
    grades its lab card a lapse (with `services`). Raises ValueError when none runs, OSError
    when a file cannot be written."""
    from lab.rebuild import comes_back
    from lab.rebuild import restore as end_rehearsal

    path, kept, lapse = end_rehearsal(ex, store=services.store if services else None)
    note = ""
    if lapse is not None and lapse.graded and services is not None:
        back = comes_back(lapse.card, services.day())
        note = f"The rebuild ended without a pass: a lapse; {back}."
    return Restored(path, kept, note)


def hints(ex: Exercise) -> tuple[int, int, bool]:
    """(hints revealed, hints in all, whether hints are off for a rehearsal)."""
    from lab.workspace import hints_shown

    return len(hints_shown(ex)), len(ex.hints()), interview(ex) is not None


def next_hint(ex: Exercise) -> tuple[Hint | None, str]:
    """Reveal the next hint: (the hint or None when all are shown, "" ) or (None, why hints are
    off) during an interview rehearsal."""
    from lab.workspace import HintsOff
    from lab.workspace import next_hint as reveal

    try:
        return reveal(ex), ""
    except HintsOff as exc:
        return None, str(exc)


def statement(ex: Exercise) -> str:
    """The exercise statement (without its hints during an interview rehearsal)."""
    from lab.workspace import statement as text

    return text(ex)


def start(ex: Exercise, level: int) -> tuple[Path, bool]:
    """Copy the stub into the workspace (never over the learner's work), mark `level` started:
    (the file, whether it was created now)."""
    from lab.workspace import start as begin

    return begin(ex, level=level)


def start_interview(ex: Exercise, level: int) -> tuple[Path, Interview]:
    """Start an interview rehearsal of `level`: the learner's file aside, a fresh stub."""
    from lab.workspace import start_interview as begin

    return begin(ex, level)
