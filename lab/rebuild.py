"""Labs that come back: a passed level is a card on the SM-2 schedule, rebuilt from a blank stub.

The level's first pass creates its card (that pass is the first review); when the card comes due
the learner *rebuilds* the level: an interview rehearsal flagged `rebuild` (the file is moved
aside, restorable; a fresh stub; the clock runs). The rebuild's pass grades the card with
`pass_quality`; ending a rebuild without a pass (`restore`) grades it a lapse. Scheduling itself
is the scheduler's one rule (`Store.grade_lab_card` -> `scheduler.transition.apply`); this
module only turns a pass into a grade. Thresholds: docs/scheduling.md, "Lab cards".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.exercises import Exercise

if TYPE_CHECKING:
    from lab.workspace import LabState

# A rebuild that takes more than this many times its clock is not fluent: a lapse.
OVERTIME_LAPSE = 2.0
FEW_GRADINGS = 3  # passed within this many gradings (and within the clock): quality 4
ABANDONED_QUALITY = 1  # a rebuild ended (restored) without a pass


def pass_quality(passed: bool, gradings: int, elapsed_s: float | None = None,
                 minutes: float | None = None) -> int:
    """The SM-2 grade (0-5) of one pass of a lab level.

    * not passed (a rebuild abandoned) -> 1, a lapse;
    * passed in more than OVERTIME_LAPSE x the clock (`minutes`) -> 2, a lapse;
    * passed on the first grading within the clock -> 5;
    * within FEW_GRADINGS gradings and within the clock -> 4;
    * otherwise (more gradings, or over the clock but within twice it) -> 3.

    `elapsed_s`/`minutes` are None for an untimed pass (outside a rehearsal): only the number
    of gradings counts then. Raises ValueError for gradings < 1 on a pass or a bad clock.
    """
    if not passed:
        return ABANDONED_QUALITY
    if isinstance(gradings, bool) or not isinstance(gradings, int) or gradings < 1:
        raise ValueError(f"a pass needs at least 1 grading, got {gradings!r}")
    in_time = True
    if elapsed_s is not None and minutes is not None:
        if minutes <= 0 or elapsed_s < 0:
            raise ValueError(f"bad clock: {elapsed_s!r} s of {minutes!r} minutes")
        if elapsed_s > OVERTIME_LAPSE * minutes * 60:
            return 2
        in_time = elapsed_s <= minutes * 60
    if in_time and gradings == 1:
        return 5
    if in_time and gradings <= FEW_GRADINGS:
        return 4
    return 3


@dataclass(frozen=True)
class PassFacts:
    """What one graded level's attempt says about the pass."""

    exercise: str
    level: int
    gradings: int
    elapsed_s: float | None
    minutes: float | None
    rebuild: bool


def pass_facts(row: dict[str, Any], gradings_since: int) -> PassFacts:
    """The facts of a passing attempt `row` (as `record.attempt_rows` yields it). In a rehearsal
    of that level its clock and gradings count; otherwise `gradings_since`: the level's gradings
    since its previous pass, this one included."""
    metrics = row.get("metrics") or {}
    level = int(row["level"])
    if metrics.get("interview_level") == level and "interview_grading" in metrics:
        return PassFacts(row["exercise"], level, max(1, int(metrics["interview_grading"])),
                         float(metrics["interview_elapsed_s"]),
                         float(metrics["interview_minutes"]), bool(metrics.get("rebuild")))
    return PassFacts(row["exercise"], level, max(1, gradings_since), None, None, False)


def record_passes(store: Any, rows: list[dict[str, Any]]) -> list[Any]:
    """After the attempts are stored: each passing level's card is created or graded
    (`Store.grade_lab_card`). Returns the LabCardResults, one per passing level."""
    results = []
    for row in rows:
        if not row["passed"]:
            continue
        attempts = [a for a in store.lab_attempts(row["exercise"]) if a.level == row["level"]]
        facts = pass_facts(row, len(_since_previous_pass(attempts)))
        quality = pass_quality(True, facts.gradings, facts.elapsed_s, facts.minutes)
        results.append(store.grade_lab_card(
            facts.exercise, facts.level, quality, passed=True, rebuild=facts.rebuild,
            pass_s=facts.elapsed_s, gradings=facts.gradings))
    return results


def _since_previous_pass(attempts: list[Any]) -> list[Any]:
    """The attempts after the previous pass, up to and including the latest one."""
    start = 0
    for i, attempt in enumerate(attempts[:-1]):
        if attempt.passed:
            start = i + 1
    return attempts[start:]


class RebuildError(ValueError):
    """A rebuild that cannot start (the level was never passed)."""


def start_rebuild(state: LabState, exercise: Exercise, level: int, minutes: int | None = None,
                  workspace: Path | None = None) -> tuple[Path, Any, Any]:
    """Start rebuilding `level`: an interview rehearsal flagged as a rebuild (the learner's file
    moved aside, kept and restorable; a fresh stub; the clock), through `state` and its store.
    Returns (path, session, card).

    Raises RebuildError when the level has no card (never passed). A card not yet due may be
    rebuilt as practice: its pass leaves the schedule alone (`Store.grade_lab_card`)."""
    from lab.workspace import DEFAULT_INTERVIEW_MINUTES

    store: Any = state.store
    card = store.lab_card(exercise.id, level) if store is not None else None
    if card is None:
        raise RebuildError(
            f"{exercise.id} level {level} has not been passed yet, so there is nothing to "
            f"rebuild: dojo lab start {exercise.id} --level {level}")
    path, session = state.start_interview(exercise, level,
                                          minutes or DEFAULT_INTERVIEW_MINUTES, workspace,
                                          rebuild=True)
    return path, session, card


def restore(state: LabState, exercise: Exercise, workspace: Path | None = None
            ) -> tuple[Path, Path | None, Any]:
    """End the rehearsal (`LabState.end_interview`); a rebuild ended without a pass grades
    its card a lapse in `state`'s store. Returns (workspace file, where the rehearsal's file
    went, LabCardResult or None). Raises ValueError when no rehearsal is running."""
    session = state.interview(exercise)
    store: Any = state.store
    result = None
    if (session is not None and session.rebuild and session.first_pass_s is None
            and store is not None):
        quality = pass_quality(False, max(1, session.gradings))
        result = store.grade_lab_card(exercise.id, session.level, quality, passed=False,
                                      rebuild=True)
    path, kept = state.end_interview(exercise, workspace)
    return path, kept, result


def comes_back(card: Any, today: Any) -> str:
    """When the card is next due, in words: "next rebuild in 6 days" / "... is due today"."""
    from questions.wording import plural

    if card is None or card.due is None:
        return ""
    days = (card.due - today).days
    if days <= 0:
        return "a rebuild is due today"
    if days == 1:
        return "next rebuild tomorrow"
    return f"next rebuild in {plural(days, 'day')}"


def due_line(card: Any, today: Any, passed_day: Any) -> str:
    """Today's queue row for a due card: "Rebuild: spec-verify L2 — last passed 9 days ago in
    14 min" (`passed_day`: the study day of its last pass; untimed: "in 3 gradings")."""
    from questions.wording import plural

    text = f"Rebuild: {card.exercise} L{card.level}"
    if passed_day is None:
        return text
    days = (today - passed_day).days
    when = ("today" if days <= 0 else "yesterday" if days == 1
            else f"{plural(days, 'day')} ago")
    how = ""
    if card.last_pass_s is not None:
        minutes = max(1, round(card.last_pass_s / 60))
        how = f" in {plural(minutes, 'min', 'min')}"
    elif card.last_pass_gradings:
        how = f" in {plural(card.last_pass_gradings, 'grading')}"
    return f"{text} — last passed {when}{how}"


@dataclass(frozen=True)
class DueRebuild:
    """A lab card due today, as Today and `dojo lab due` list it."""

    exercise: str
    level: int
    due: Any  # dt.date
    line: str  # due_line's text
    command: str  # the headless way to start it


def due_rebuilds(store: Any, now: Any = None) -> list[DueRebuild]:
    """The lab cards due today (most overdue first), worded for the queue."""
    today = store.study_day(now)
    out = []
    for card in store.due_lab_cards(now):
        passed_day = None if card.last_passed_at is None else store.study_day(card.last_passed_at)
        out.append(DueRebuild(card.exercise, card.level, card.due,
                              due_line(card, today, passed_day),
                              f"dojo lab rebuild {card.exercise} --level {card.level}"))
    return out
