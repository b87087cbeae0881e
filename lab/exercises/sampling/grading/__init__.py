"""sampling, parent side: cases, checks and messages, one module per level.

Level 1 is compared bit for bit with the reference (transformers' own processors where it has
them), level 2 row by row with it, level 3 exactly (seeded draws) after a chi-square test of the
law, level 4 token for token with log-probabilities within 1e-4. `drive.py` (the child) only
calls the learner's functions and returns raw outputs; everything judged happens here.
The contract's table of boundaries, ties and feature pairs: ../CONTRACT.md.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.sampling.grading import level1, level2, level3, level4
from lab.exercises.sampling.grading.common import FAMILY_ALPHA, REFERENCE, untouched_inputs
from lab.grader.api import Case, Verdict

__all__ = ["FAMILY_ALPHA", "REFERENCE", "cases", "check"]

LEVELS: dict[int, Any] = {1: level1, 2: level2, 3: level3, 4: level4}


def _level(number: int) -> Any:
    if number not in LEVELS:
        raise ValueError(f"sampling has levels 1-4, not {number}")
    return LEVELS[number]


def cases(level: int, seed: int) -> list[Case]:
    """Fixed edge cases + hidden cases generated from `seed`, cheapest first."""
    return sorted(_level(level).cases(seed), key=lambda c: c.size)


def check(case: Case, got: Any, expected: Any) -> Verdict:
    """Judge one raw observation from `drive.run`; the message names the bug. First: the
    caller's inputs are read-only at every level."""
    touched = untouched_inputs(case, got)
    if touched is not None:
        return touched
    verdict: Verdict = _level(case.level).check(case, got, expected)
    return verdict
