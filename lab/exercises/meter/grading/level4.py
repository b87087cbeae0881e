"""meter level 4: the ledger over a stream, in one pass and bounded memory.

Cases: an empty stream; a redelivery 9,999 events after the first (inside the window); 10^6
events under the memory cap, timed beside the reference's run of the same stream (one call each:
seconds of work, so no batches).
"""

from __future__ import annotations

from typing import Any

from lab.exercises.meter.grading.common import CASE_TIMEOUT_S, PRICES
from lab.grader.api import Case

BIG = 1_000_000
# Over what a solution at the gate takes: a call over the 12x gate is stopped at 12x the
# reference's pass beside it (runner.Overtime), and that pass took up to 10 s at load 11-13
# on 2 cores (126 s: a 120 s limit timed out solutions the gate was to stop).
TIMED_TIMEOUT_S = 240.0


def _stream(cid: str, description: str, spec: dict[str, Any], *, timed: bool = False,
            timeout_s: float = CASE_TIMEOUT_S, hint: str | None = None) -> Case:
    params: dict[str, Any] = {"function": "ledger", "stream": spec, "prices": PRICES}
    if hint:
        params["hint"] = hint
    return Case(id=cid, level=4, description=description, size=int(spec["n"]), timed=timed,
                timed_once=timed, timeout_s=timeout_s, params=params)


def cases(seed: int) -> list[Case]:
    mix = {"dup": 0.02, "retry": 0.05, "late": 0.02, "untagged": 0.08, "shared": 0.1,
           "months": 3}
    return [
        _stream("empty-stream", "a generator that yields nothing", {"seed": seed, "n": 0}),
        _stream("far-redelivery", "an event redelivered 9,999 events after its first delivery",
                {"seed": seed, "n": 12_000, **mix, "far_dup": True},
                hint="a redelivery arrives up to 9,999 events after the first delivery: "
                     "remember each (request_id, attempt) for the 10,000 events that follow it"),
        _stream("million-events", "10^6 events: one pass, bounded memory, timed beside the "
                "reference's pass", {"seed": seed, "n": BIG, **mix}, timed=True,
                timeout_s=TIMED_TIMEOUT_S),
    ]

