"""kv-bytes, child side: call the learner's function on the case's arguments, report what it did.

Returns {"value": <what it returned>} or {"raised": "ValueError", "message": ...}; the grader
compares that with the reference's behaviour in its own process (grading.check).
"""

from __future__ import annotations

import copy
from types import ModuleType

from lab.grader.api import Case, RunContext

CHILD_MODULES: tuple[str, ...] = ()


def run(solution: ModuleType, case: Case, ctx: RunContext) -> object:
    name = case.params["function"]
    fn = getattr(solution, name, None)
    if not callable(fn):
        raise AttributeError(f"your module does not define a function {name}()")
    try:
        value = fn(**copy.deepcopy(case.params["args"]))
    except ValueError as exc:
        return {"raised": "ValueError", "message": str(exc)}
    return {"value": value}
