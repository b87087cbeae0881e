"""Grading for `fleet` (parent side): fixed boundary cases, seeded hidden scenarios.

One module per level holds that level's cases and the check of its function (level 1
`evaluate_plan`, level 2 `cheapest_plan`, level 3 `plan_year`), with the boundaries it covers in
its docstring; `common` holds the scenarios and the re-evaluation of a plan by the reference's
month formulas (imported lazily) that levels 2 and 3 judge with.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.fleet.grading import common, level1, level2, level3
from lab.grader.api import Case, Verdict

REFERENCE = "lab.reference.fleet"
LEVELS = {1: level1, 2: level2, 3: level3}
CHECKS = {"evaluate_plan": level1.check, "cheapest_plan": level2.check, "plan_year": level3.check}


def cases(level: int, seed: int) -> list[Case]:
    if level not in LEVELS:
        raise ValueError(f"fleet has no level {level}")
    out: list[Case] = LEVELS[level].cases(seed)
    return out


def check(case: Case, got: Any, expected: Any) -> Verdict:
    verdict = common.raised_verdict(case, got, expected)
    if verdict is not None:
        return verdict
    return CHECKS.get(case.params["function"], level3.check)(case, got["value"],
                                                               expected["value"])
