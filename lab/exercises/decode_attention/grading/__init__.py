"""decode-attention, parent side: cases, answers and checks, one module per level.

Every answer is computed here in float64 torch (softmax, an explicit einsum attention per
sequence, the split partials and their combine) from the case's inputs, which inputs.py draws the
same way in the learner's child; nothing goes through the learner's launch code. Outputs are
compared within the dtype's tolerance (common.TOLERANCES); a miss is matched against known
mistakes and the message names the one it fits. The speed cases are judged in speed.py.
The contract's table of boundaries: ../CONTRACT.md.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.decode_attention.grading import level1, level2, level3, level4, speed
from lab.exercises.decode_attention.grading.common import REFERENCE
from lab.grader.api import Case, RunContext, Verdict

__all__ = ["REFERENCE", "cases", "check", "expected"]

LEVELS: dict[int, Any] = {1: level1, 2: level2, 3: level3, 4: level4}


def _level(number: int) -> Any:
    if number not in LEVELS:
        raise ValueError(f"decode-attention has levels 1-4, not {number}")
    return LEVELS[number]


def cases(level: int, seed: int) -> list[Case]:
    """Fixed boundary cases + a hidden seeded one (+ the CUDA speed case), cheapest first."""
    return sorted(_level(level).cases(seed), key=lambda c: c.size)


def expected(case: Case, ctx: RunContext) -> Any:
    if case.params["kind"] == "speed":
        return speed.expected(case, ctx.device)
    return _level(case.level).expected(case)


def check(case: Case, got: Any, expected: Any) -> Verdict:
    verdict: Verdict = _level(case.level).check(case, got, expected)
    return verdict
