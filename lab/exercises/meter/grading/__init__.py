"""Grading for `meter` (parent side): fixed boundary cases, seeded hidden cases, exact checks.

One module per level holds that level's cases, with the boundaries it covers in its docstring;
`common` holds the price sheet and the case builders, `checks` the reference's answer and the
exact comparison every level shares. Nothing here imports the reference at import time.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.meter.grading import checks, level1, level2, level3, level4
from lab.grader.api import Case, RunContext, Verdict

REFERENCE = "lab.reference.meter"
LEVELS = {1: level1, 2: level2, 3: level3, 4: level4}


def cases(level: int, seed: int) -> list[Case]:
    if level not in LEVELS:
        raise ValueError(f"meter has no level {level}")
    out: list[Case] = LEVELS[level].cases(seed)
    return out


def expected(case: Case, ctx: RunContext) -> Any:
    """The reference's answer (see `checks.expected`)."""
    return checks.expected(case, ctx)


def check(case: Case, got: Any, expected: Any) -> Verdict:
    return checks.check(case, got, expected)
