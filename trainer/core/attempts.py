"""The one place graded attempts are written and read back: the scheduler's `lab_attempts` table.

The judge (`lab.grader.runner.grade`) only returns a `GradeResult`; the lab service
(`trainer.core.lab.grade_recorded`) hands it to `Recorder.record` once (never anything the
sandbox said about itself): one row per graded level, in one transaction with the lab cards
its passes imply and the questions its failed cases bring back. Status and best figures for
`dojo lab list`, the lab screen and Stats are all derived from those rows (`level_summaries`);
the workspace state holds only what is not an attempt (workspace path, hints shown). The store
is injected, so tests and other front ends can pass their own; a storage error never loses a
grading report — it is returned as a message for the report to show.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lab.grader.results import GradeResult


class AttemptStore(Protocol):
    """What a `Recorder` needs of its store (`scheduler.store.Store` is one; a test passes its
    own): the attempts, the lab cards their passes grade (`lab.rebuild.record_passes`), the
    questions a failed case brings back (`lab.concepts.recall_failed`), all in one transaction."""

    def transaction(self) -> AbstractContextManager[None]: ...

    def record_lab_attempt(self, exercise: str, level: int, device: str, passed: bool,
                           cases: list[dict[str, Any]], metrics: dict[str, Any],
                           duration_s: float) -> int: ...

    def lab_attempts(self, exercise: str | None = None) -> list[Any]: ...

    def grade_lab_card(self, exercise: str, level: int, quality: int, *, passed: bool,
                       rebuild: bool, pass_s: float | None = None,
                       gradings: int | None = None) -> Any: ...

    def add_lab_recalls(self, items: Iterable[tuple[str, str, int, str]]) -> list[str]: ...


@dataclass(frozen=True)
class LevelStanding:
    """What the attempts table says about one level."""

    status: str  # "passing" (last attempt passed) | "failing" | "not graded"
    attempts: int = 0
    ever_passed: bool = False
    best_passed_cases: int = 0
    cases: int = 0
    best_metrics: dict[str, tuple[float, str]] = field(default_factory=dict)  # value, device


def attempt_rows(result: GradeResult) -> Iterator[dict[str, Any]]:
    """One row per graded level, with per-case outcomes, from the grader's own result."""
    for lvl in result.levels:
        cases = [
            {"id": r.case.id, "passed": r.passed, "kind": r.kind, "required": r.case.required,
             "seed": result.seed, **({"metrics": r.metrics} if r.metrics else {})}
            for r in lvl.results
        ]
        yield {"exercise": result.exercise, "level": lvl.level, "device": result.device,
               "passed": lvl.passed, "cases": cases,
               "metrics": {**lvl.metrics(), **result.attempt_metrics},
               "duration_s": lvl.duration_s}


class Recorder:
    """Writes a grading's attempts to one open store (`store=None`: the database could not be
    opened, `error` says why, and nothing is stored)."""

    def __init__(self, store: AttemptStore | None, error: Exception | None = None) -> None:
        self.store = store
        self.error = error
        # What the last `record` did to the passing levels' lab cards (lab.rebuild), and why
        # that failed when it did (the attempts are stored all the same).
        self.card_results: list[Any] = []
        self.card_error = ""
        # Questions the last grading's failed cases brought back into today's queue
        # (lab.concepts), each a `lab.concepts.Recall`.
        self.recalls: list[Any] = []

    def record(self, result: GradeResult) -> tuple[bool, str]:
        """Store every graded level of `result` and each passing level's lab card
        (`lab.rebuild.record_passes`) in one transaction; (stored, why not).

        A crash anywhere in it leaves both or neither: never a passed level without its card.
        A card that fails for any other reason is rolled back alone (a savepoint) and named in
        `card_error`; the attempts are kept, and the next open repairs the card."""
        from lab.rebuild import record_passes
        from scheduler.faults import crash_point

        self.card_results, self.card_error, self.recalls = [], "", []
        store = self.store
        try:
            if store is None:
                raise self.error or RuntimeError("no database is open")
            rows = list(attempt_rows(result))
            with store.transaction():
                for row in rows:
                    store.record_lab_attempt(**row)
                crash_point("lab-attempt-stored")
                try:
                    with store.transaction():
                        self.card_results = record_passes(store, rows)
                except Exception as exc:  # the attempt is stored: say so, lose nothing
                    self.card_results = []
                    self.card_error = f"the lab card was not updated: {exc}"
            self.recalls = _recall_failed(store, result)
        except Exception as exc:  # storage trouble must not cost the learner their report
            return False, f"could not store the attempt: {type(exc).__name__}: {exc}"
        return True, ""


class Unrecorded(Recorder):
    """A recorder that stores nothing and says why (a `--file` that is not the workspace
    file, graded without `--record`): the grading is reported, the level's record untouched."""

    def __init__(self, why: str) -> None:
        super().__init__(None)
        self.why = why

    def record(self, result: GradeResult) -> tuple[bool, str]:
        self.card_results, self.card_error, self.recalls = [], "", []
        return False, self.why


def _recall_failed(store: AttemptStore, result: GradeResult) -> list[Any]:
    """Failed cases bring their concepts back (lab.concepts); never costs the report."""
    try:
        from lab.concepts import failed_recalls, recall_failed
        from lab.exercises import get

        ex = get(result.exercise)
        _cards_for(store, [r.question_id for r in failed_recalls(ex, result)])
        return recall_failed(store, ex, result)
    except Exception:
        return []


def _cards_for(store: AttemptStore, question_ids: list[str]) -> None:
    """On a fresh data folder the questions have no cards yet (the bank is synced by the app
    and by `dojo due`): sync it now, so the first grading's wrong answers bring their
    questions back too. An injected store is its caller's to fill."""
    from scheduler.store import Store

    if question_ids and isinstance(store, Store) and store.missing_cards(question_ids):
        from trainer.core.bank import load_study_bank, sync_bank

        sync_bank(store, load_study_bank())


def summarize_level(attempts: list[Any]) -> LevelStanding:
    """Status and best figures of one level from its attempts (oldest first)."""
    if not attempts:
        return LevelStanding("not graded")
    best: dict[str, tuple[float, str]] = {}
    for a in attempts:
        if not a.passed:
            continue
        for key in ("median_ratio", "p95_ratio"):
            value = a.metrics.get(key)
            if isinstance(value, int | float) and (key not in best or value < best[key][0]):
                best[key] = (float(value), str(a.device))
    passed_counts = [(sum(bool(c.get("passed")) for c in a.cases), len(a.cases))
                     for a in attempts]
    best_passed, total = max(passed_counts)
    return LevelStanding(
        status="passing" if attempts[-1].passed else "failing",
        attempts=len(attempts),
        ever_passed=any(a.passed for a in attempts),
        best_passed_cases=best_passed,
        cases=total,
        best_metrics=best,
    )


def level_summaries(attempts: Iterable[Any]) -> dict[int, LevelStanding]:
    """{level: summary} from one exercise's attempts (oldest first)."""
    by_level: dict[int, list[Any]] = {}
    for a in attempts:
        by_level.setdefault(int(a.level), []).append(a)
    return {level: summarize_level(items) for level, items in by_level.items()}


def describe(summary: LevelStanding) -> str:
    """Best figures in words: "best 38/38 cases, 3 attempts, best median_ratio 1.02 (cpu)"."""
    if not summary.attempts:
        return ""
    from questions.wording import noun, plural

    parts = [f"best {summary.best_passed_cases}/{summary.cases} {noun(summary.cases, 'case')}",
             plural(summary.attempts, "attempt")]
    parts += [f"best {k} {v:.2f} ({dev})" for k, (v, dev) in sorted(summary.best_metrics.items())]
    return ", ".join(parts)
