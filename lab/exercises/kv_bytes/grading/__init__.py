"""Grading for `kv-bytes` (parent side): fixed edge cases, seeded hidden cases, diagnosing checks.

`drive.py` calls the learner's function in the sandbox; everything here runs in the grader's
process only. One module per level holds that level's cases and the known mistakes its diagnosis
recomputes: level 1's for `kv_bytes_per_token` (also asked at level 2, under tensor parallelism),
level 2's for the capacity functions; `common` holds the configs, the builders and the exact
comparison. Nothing here imports the reference.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.kv_bytes.grading import common, level1, level2
from lab.grader.api import Case, Verdict

REFERENCE = "lab.reference.kv_bytes"
LEVELS = {1: level1, 2: level2}


def cases(level: int, seed: int) -> list[Case]:
    if level not in LEVELS:
        raise ValueError(f"kv-bytes has no level {level}")
    out: list[Case] = LEVELS[level].cases(seed)
    return out


def check(case: Case, got: object, expected: object) -> Verdict:
    per_token = case.params["function"] == "kv_bytes_per_token"
    diagnose: Any = level1.diagnose if per_token else level2.diagnose
    return common.check(case, got, expected, diagnose)
