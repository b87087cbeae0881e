"""Child side of `meter`: call the learner's function on the case's events, return what it gave.

Events are handed over as a one-shot iterator (a generator for the streaming level), so a
solution must walk them once. Decimal amounts come back as strings, floats as floats (the parent
says why a float is wrong), anything else as a tagged description. No figure is judged here.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from decimal import Decimal
from types import ModuleType
from typing import Any

from lab.exercises.meter import streams
from lab.grader.api import Case, RunContext

CHILD_MODULES = ("lab.exercises.meter.streams",)


def plain(value: Any, depth: int = 0) -> Any:
    """The learner's value as plain data: Decimal -> str, containers recursively."""
    if depth > 8:
        return {"unsupported": "nesting too deep"}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else f"<non-str key {k!r}>"): plain(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, depth + 1) for v in value]
    return {"unsupported": type(value).__name__, "repr": repr(value)[:120]}


def _events(params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "stream" in params:
        return streams.events(params["stream"])
    return iter(copy.deepcopy(params["events"]))


def call_params(case: Case, ctx: RunContext) -> dict[str, Any]:
    """The case's params for this call: a timed case's calls each stream other events (their
    own ctx.seed), so no bill can be replayed from an earlier call."""
    if not case.timed or "stream" not in case.params:
        return case.params
    stream = case.params["stream"]
    return {**case.params, "stream": {**stream, "seed": f"{stream['seed']}/{ctx.seed}"}}


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Any:
    params = call_params(case, ctx)
    name = params["function"]
    fn = getattr(solution, name, None)
    if not callable(fn):
        raise AttributeError(f"your module does not define a function {name}()")
    prices = copy.deepcopy(params["prices"])
    try:
        if name == "bill_request":
            value = fn(copy.deepcopy(params["event"]), prices)
        else:
            value = fn(_events(params), prices)
    except ValueError as exc:
        return {"raised": "ValueError", "message": str(exc)}
    return {"value": plain(value)}
