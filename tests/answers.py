"""The reference's answer of a case, computed once per test process.

The exercises' in-process graders (`grade_in_process` in tests/<exercise>/conftest.py) grade
dozens of broken files on the same seeded cases, and asked the reference for the same answer
every time: half of each grading's work. A case is fixed by its exercise, level, id and seed, so
its answer is kept here; each caller gets its own deep copy, so a check (or a broken file) that
changes what it is handed cannot reach the next test.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TypeVar

from lab.grader.api import Case

T = TypeVar("T")

_answers: dict[tuple[str, int, str, int], object] = {}


def answer(exercise: str, case: Case, seed: int, compute: Callable[[Case], T]) -> T:
    """`compute(case)` (the reference's answer of `case` graded with `seed`), once per
    process."""
    key = (exercise, case.level, case.id, seed)
    if key not in _answers:
        _answers[key] = compute(case)
    kept: T = copy.deepcopy(_answers[key])  # type: ignore[assignment]
    return kept
