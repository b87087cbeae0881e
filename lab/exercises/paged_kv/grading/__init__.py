"""Grading for `paged-kv` (parent side): hidden seeded cases per level and the checks.

Levels 1-3 replay BlockManager traces (traces.py: invariants after every operation, then an exact
comparison with the reference); level 4 checks the gather, the slot write and decoding of the
shipped target over the learner's paged pool (level4.py). The learner's code only runs in
drive.py; nothing here imports the reference. This module only dispatches.
"""

from __future__ import annotations

from typing import Any

from lab.exercises import untouched
from lab.exercises.paged_kv.grading import level1, level2, level3, level4, traces
from lab.grader.api import Case, Verdict

REFERENCE = "lab.reference.paged_kv"


def cases(level: int, seed: int) -> list[Case]:
    if level == 1:
        return level1.cases(seed)
    if level == 2:
        return level2.cases(seed)
    if level == 3:
        return level3.cases(seed)
    if level == 4:
        return level4.cases(seed)
    raise ValueError(f"paged-kv has no level {level}")


def check(case: Case, got: Any, expected: Any) -> Verdict:
    """First, on every kind: the caller's inputs are read-only (drive.py compares them)."""
    touched = got.get("touched") if isinstance(got, dict) else None
    if touched:
        first = touched[0][0]
        return Verdict(False, untouched.message(first, [p for f, p in touched if f == first]))
    if case.params["kind"] == "trace":
        return traces.check_trace(case.params, got, expected)
    return level4.check(case, got, expected)
