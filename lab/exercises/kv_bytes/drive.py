"""kv-bytes, child side: call the learner's function on the case's arguments, report what it did.

Returns {"value": <what it returned>} or {"raised": "ValueError", "message": ...}, with
`touched`: which of the caller's arguments (the config dict, lists) the call changed in place,
against a private copy (`lab.exercises.untouched`); the grader compares that with the
reference's behaviour in its own process (grading.check).
"""

from __future__ import annotations

import copy
from types import ModuleType

from lab.exercises.untouched import changed, keep
from lab.grader.api import Case, RunContext

CHILD_MODULES: tuple[str, ...] = ("lab.exercises.untouched",)


def run(solution: ModuleType, case: Case, ctx: RunContext) -> object:
    name = case.params["function"]
    fn = getattr(solution, name, None)
    if not callable(fn):
        raise AttributeError(f"your module does not define a function {name}()")
    args = copy.deepcopy(case.params["args"])
    kept = keep(args)
    try:
        out: dict[str, object] = {"value": fn(**args)}
    except ValueError as exc:
        out = {"raised": "ValueError", "message": str(exc)}
    touched = changed(args, kept)
    if touched:  # reported only when there is something to report
        out["touched"] = touched
    return out
