"""spec-verify, parent side: cases, expected answers and checks, one module per level.

Levels 1, 4 (greedy) and 5 are exact comparisons with the target's own greedy decoding; levels 2-3
and sampled level 4 are chi-square tests against the exact law, Bonferroni-corrected so that a
correct solution fails a level's grading run with probability at most FAMILY_ALPHA. Messages
name the likely bug: structural violations are checked before any statistics.

`drive.py` (the child) only calls the learner's functions and returns raw outputs; everything
judged - inputs rebuilt, expected answers, counts, statistics - is computed here, in the parent.
Each level module lists its boundaries and, for sampling levels, the power of its cases.
"""

from __future__ import annotations

from typing import Any

from lab.exercises import untouched
from lab.exercises.spec_verify.grading import level1, level2, level3, level4, level5
from lab.exercises.spec_verify.grading.common import FAMILY_ALPHA, NEAR_TIE, REFERENCE
from lab.exercises.spec_verify.inputs import SHIPPED_PROMPTS
from lab.grader.api import Case, RunContext, Verdict

__all__ = ["FAMILY_ALPHA", "NEAR_TIE", "REFERENCE", "SHIPPED_PROMPTS", "cases", "check",
           "expected", "inputs"]

LEVELS = {1: level1, 2: level2, 3: level3, 4: level4, 5: level5}


def _level(number: int) -> Any:
    if number not in LEVELS:
        raise ValueError(f"spec-verify has levels 1-5, not {number}")
    return LEVELS[number]


def cases(level: int, seed: int) -> list[Case]:
    """Fixed edge cases + hidden cases generated from `seed`, cheapest first."""
    return sorted(_level(level).cases(seed), key=lambda c: c.size)


def expected(case: Case, ctx: RunContext) -> Any:
    """What `check` compares against, computed in the parent (never by running the learner)."""
    return _level(case.level).expected(case, ctx)


def inputs(case: Case, ctx: RunContext) -> Any:
    """Level 1's real-model inputs (the shipped draft's proposal, the target's logits rows) as
    the child would build them, which costs it transformers' import and the pair's load;
    None for every other case (built in the child)."""
    return level1.given(case, ctx)


FUNCTIONS = {1: "verify_greedy", 2: "verify_sampling", 3: "verify_batch"}


def check(case: Case, got: Any, expected: Any) -> Verdict:
    """Judge one raw observation from `drive.run`; the message names the bug. First, at levels
    1-3: the caller's drafts and distributions are read-only."""
    touched = got.get("touched") if isinstance(got, dict) else None
    if touched:
        return Verdict(False, untouched.message(FUNCTIONS[case.level], list(touched)))
    verdict: Verdict = _level(case.level).check(case, got, expected)
    return verdict
