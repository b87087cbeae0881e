"""Which bank questions each grading case tests, and bringing them back when a case fails.

Each exercise keeps `concepts.toml` beside its cases: ordered rules of (level, case-id patterns,
question ids), first match wins, a "*" rule last per level. Patterns rather than a field on every
`Case` so cases added later still name a concept. A grading that fails cases adds the questions
behind them to today's queue (`Store.add_lab_recalls`: once per question per study day, the
card's SM-2 state untouched; answered as a re-drill, which never reschedules).
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.exercises import Exercise
    from lab.grader.results import GradeResult

CONCEPTS_FILE = "concepts.toml"


@dataclass(frozen=True)
class Rule:
    level: int
    cases: tuple[str, ...]
    questions: tuple[str, ...]


@dataclass(frozen=True)
class Recall:
    """A question brought back by a failed case."""

    question_id: str
    exercise: str
    level: int
    case_id: str


@cache
def _rules(folder: Path) -> tuple[Rule, ...]:
    path = folder / CONCEPTS_FILE
    if not path.exists():
        return ()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return tuple(Rule(int(r["level"]), tuple(r["cases"]), tuple(r["questions"]))
                 for r in data.get("rule", []))


def rules(exercise: Exercise) -> tuple[Rule, ...]:
    return _rules(exercise.path)


def concepts_for(exercise: Exercise, level: int, case_id: str) -> tuple[str, ...]:
    """The question ids the case tests (empty when no rule matches: a gap the tests catch)."""
    for rule in rules(exercise):
        if rule.level == level and any(fnmatch.fnmatchcase(case_id, p) for p in rule.cases):
            return rule.questions
    return ()


# The only failure that says something about the learner's grasp of a concept: their code
# answered, and the answer was wrong. A stub, a syntax error, a wrong signature, `.cuda()` on a
# CPU, a memory kill, a timeout, a case not run or the judge's own trouble bring nothing back.
CONCEPT_KINDS = frozenset({"wrong"})


def failed_recalls(exercise: Exercise, result: GradeResult) -> list[Recall]:
    """The questions behind every failed required case of `result`, each once (its first failed
    case names it); only wrong answers count (CONCEPT_KINDS)."""
    seen: set[str] = set()
    out: list[Recall] = []
    for lvl in result.levels:
        for r in lvl.results:
            if r.passed or not r.case.required or r.kind not in CONCEPT_KINDS:
                continue
            for qid in concepts_for(exercise, lvl.level, r.case.id):
                if qid not in seen:
                    seen.add(qid)
                    out.append(Recall(qid, exercise.id, lvl.level, r.case.id))
    return out


def recall_failed(store: Any, exercise: Exercise, result: GradeResult) -> list[Recall]:
    """Add the failed cases' questions to today's queue; returns those added today for the
    first time (a question already brought back today, or not in the bank, is left out)."""
    recalls = failed_recalls(exercise, result)
    if not recalls:
        return []
    added = set(store.add_lab_recalls(
        [(r.question_id, r.exercise, r.level, r.case_id) for r in recalls]))
    return [r for r in recalls if r.question_id in added]


def recall_lines(recalls: list[Recall]) -> list[str]:
    """What a grading brought back, per failed case: "kv-bytes L1 failed int4-odd-head-dim:
    2 questions added to today's queue (kv-cache-009, kv-cache-003)"."""
    by_case: dict[tuple[str, int, str], list[str]] = {}
    for r in recalls:
        by_case.setdefault((r.exercise, r.level, r.case_id), []).append(r.question_id)
    return [f"{ex} L{level} failed {case}: {len(ids)} question{'s' if len(ids) != 1 else ''} "
            f"added to today's queue ({', '.join(ids)})"
            for (ex, level, case), ids in by_case.items()]
