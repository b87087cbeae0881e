"""Grading for `tensor-parallel` (parent side): cases per level and the checks.

The learner's layers run in W processes (drive.py); here each rank's shards, outputs and
collective log are compared with the single-process layer computed from the same seeded
weights: level1.py (column/row linear), level2.py (MLP, head plans, attention), level3.py
(greedy decoding of the shipped target at W = 2). Nothing here imports the reference.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.tensor_parallel.grading import level1, level2, level3
from lab.exercises.tensor_parallel.grading.common import Fail
from lab.grader.api import Case, RunContext, Verdict

REFERENCE = "lab.reference.tensor_parallel"
_LEVELS = {1: level1, 2: level2, 3: level3}


def cases(level: int, seed: int) -> list[Case]:
    if level not in _LEVELS:
        raise ValueError(f"tensor-parallel has no level {level}")
    out: list[Case] = _LEVELS[level].cases(seed)
    return out


def expected(case: Case, ctx: RunContext) -> Any:
    if case.level == 3:
        checkpoint = (ctx.model_paths or {}).get("target")
        return {"checkpoint": checkpoint, **level3.expected(case, checkpoint)}
    return _LEVELS[case.level].expected(case)


def check(case: Case, got: Any, expected: Any) -> Verdict:
    try:
        if case.level == 3:
            return level3.check(case, got, expected, expected.get("checkpoint"))
        _LEVELS[case.level].check(case, got, expected)
    except Fail as fail:
        return Verdict(False, str(fail))
    if case.params["kind"] == "plan":
        return Verdict(True, "every head plan as expected")
    ranks = got["ranks"]
    return Verdict(True, f"{len(ranks)} ranks (pids {[r['pid'] for r in ranks]}, "
                         f"{ranks[0].get('backend')}) agree with the single-process layer")
