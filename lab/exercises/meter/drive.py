"""Child side of `meter`: call the learner's function on the case's events, return what it gave.

Events are handed over as a one-shot iterator (a generator for the streaming level), so a
solution must walk them once. Decimal amounts come back as strings, floats as floats (the parent
says why a float is wrong), anything else as a tagged description. No figure is judged here.

The caller's inputs are read-only: `touched` lists what the call changed in place, against a
private copy (`lab.exercises.untouched`): the price sheet and the event (or the events of a list)
after the call; a stream's event when the solution asks for the next one (a stream reuses its
events for later retries and redeliveries). The timed 10^6-event stream is not watched (the
comparison would be timed with the solution); the untimed streams run the same code.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from decimal import Decimal
from types import ModuleType
from typing import Any

from lab.exercises.meter import streams
from lab.exercises.untouched import changed, keep
from lab.grader.api import Case, RunContext

CHILD_MODULES = ("lab.exercises.meter.streams", "lab.exercises.untouched")


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


def _watched(events: Iterator[dict[str, Any]], touched: list[str]) -> Iterator[dict[str, Any]]:
    """The stream, each event compared with its private copy when the next one is asked for
    (and at the end, or when the walk is abandoned: close())."""
    last: tuple[int, dict[str, Any], dict[str, Any]] | None = None
    try:
        for i, event in enumerate(events):
            if last is not None:
                _compare(*last, touched)
            last = (i, event, dict(event))  # values are str / int / None: a flat copy is private
            yield event
    finally:
        if last is not None:
            _compare(*last, touched)


def _compare(i: int, event: dict[str, Any], kept: dict[str, Any], touched: list[str]) -> None:
    if event != kept and len(touched) < 8:
        touched += changed({f"events[{i}]": event}, {f"events[{i}]": kept})


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
    args: dict[str, Any] = {"prices": copy.deepcopy(params["prices"])}
    touched: list[str] = []
    stream = None
    if name == "bill_request":
        args["event"] = copy.deepcopy(params["event"])
    elif "stream" in params:
        stream = streams.events(params["stream"])
        if not case.timed:
            stream = _watched(stream, touched)
    else:
        args["events"] = copy.deepcopy(params["events"])
    kept = keep(args)
    try:
        if name == "bill_request":
            value = fn(args["event"], args["prices"])
        else:
            value = fn(stream if stream is not None else iter(args["events"]), args["prices"])
        out: dict[str, Any] = {"value": plain(value)}
    except ValueError as exc:
        out = {"raised": "ValueError", "message": str(exc)}
    if stream is not None and hasattr(stream, "close"):
        stream.close()  # compares the last event the solution was handed
    touched += changed(args, kept)
    if touched:  # reported only when there is something to report
        out["touched"] = touched
    return out
