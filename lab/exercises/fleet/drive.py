"""Child side of `fleet`: call the learner's planner on the case's scenario and demand, return
what it gave as plain data (exact numbers as floats, ints and bools as they are), and `touched`:
which of the caller's inputs (scenario, demand, plan) the call changed in place, against a
private copy (`lab.exercises.untouched`). No figure or plan is judged here.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from fractions import Fraction
from types import ModuleType
from typing import Any

from lab.exercises.untouched import changed, keep
from lab.grader.api import Case, RunContext

CHILD_MODULES: tuple[str, ...] = ("lab.exercises.untouched",)


def plain(value: Any, depth: int = 0) -> Any:
    """The learner's value as plain data: Fraction/Decimal -> float, containers recursively."""
    if depth > 8:
        return {"unsupported": "nesting too deep"}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Fraction | Decimal):
        return float(value)
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else f"<non-str key {k!r}>"): plain(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, depth + 1) for v in value]
    return {"unsupported": type(value).__name__, "repr": repr(value)[:120]}


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Any:
    params = case.params
    name = params["function"]
    fn = getattr(solution, name, None)
    if not callable(fn):
        raise AttributeError(f"your module does not define a function {name}()")
    args = {"scenario": copy.deepcopy(params["scenario"]),
            "demand": copy.deepcopy(params["demand"])}
    if name == "evaluate_plan":
        args["plan"] = copy.deepcopy(params["plan"])
    kept = keep(args)
    try:
        out: dict[str, Any] = {"value": plain(fn(*args.values()))}
    except ValueError as exc:
        out = {"raised": "ValueError", "message": str(exc)}
    touched = changed(args, kept)
    if touched:  # reported only when there is something to report
        out["touched"] = touched
    return out
