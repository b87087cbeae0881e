"""Replay a timed list of requests against an engine and record everything it emits.

The clock is injected: with the probe model it is virtual (each forward charges its cost, idle
steps advance it by `tick`), so policy and latency checks do not depend on CPU speed; with the
real model it only moves while the engine is idle (or is the wall clock for the benchmark).
Runs in the sandbox child (through drive.py) for the learner's engine and in the grader for the
reference; also used by the tests and bench/batch_engine.py. It records, never judges.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.exercises.batch_engine.runtime import Request

TICK_S = 0.001
UNKNOWN_ID = 987_654_321  # what the harness cancels for "an id no request has"
MAX_STEPS = 60_000
STEPS_PER_TOKEN = 20  # a step moves at least one token; 20x covers chunking and re-prefills
SPARE_STEPS = 5_000


def step_budget(arrivals: list[Arrival], max_wait_s: float, tick: float,
                cap: int = MAX_STEPS, until: float = 0.0) -> int:
    """Steps after which an engine that has not finished is stuck: the idle ticks the arrivals,
    scheduled events (`until`: the last cancel or shutdown) and batching waits can take, plus
    STEPS_PER_TOKEN per prompt or output token, plus spare (a livelocked engine is named after
    seconds, not after 60,000 steps)."""
    last = max([a.t for a in arrivals] + [until])
    waits = len(arrivals) * max(max_wait_s, 0.0)
    tokens = sum(len(a.request.prompt) + a.request.max_tokens for a in arrivals)
    idle = math.ceil((last + waits) / max(tick, 1e-9))
    return min(cap, idle + STEPS_PER_TOKEN * tokens + SPARE_STEPS)


class FakeClock:
    """A clock that only moves when told to. It counts whole nanoseconds, so a time reached by
    any sequence of ticks and model charges reads as the double nearest its exact value (no
    drift from adding 0.001 again and again): a deadline at an exact binary fraction
    (0.25 s + 0.125 s) falls on one tick, and `>=` against `>` decides a case."""

    def __init__(self) -> None:
        self._ns = 0

    @property
    def now(self) -> float:
        return self._ns / 1e9

    def __call__(self) -> float:
        return self._ns / 1e9

    def advance(self, dt: float) -> None:
        self._ns += round(dt * 1e9)


@dataclass(frozen=True)
class Arrival:
    t: float
    request: Request


def arrivals_from(params: list[dict[str, Any]]) -> list[Arrival]:
    """Case params (JSON) -> arrivals sorted by time (stable, so ties keep their order)."""
    out = [
        Arrival(float(p.get("t", 0.0)), Request(
            prompt=tuple(p["prompt"]), max_tokens=int(p["max_tokens"]),
            stop_token_ids=tuple(p.get("stop_ids", ())),
            stop_sequences=tuple(tuple(s) for s in p.get("stop_seqs", ())),
        ))
        for p in params
    ]
    return sorted(out, key=lambda a: a.t)


@dataclass
class Replay:
    """What happened (`drive.run` sends it to the grader as a plain dict).

    events: (time, kind, request index, payload): kind "token" (payload = token id), "finish"
    (payload = reason) or "stray" (an event for an id submit never returned; payload = repr).
    """

    submitted: list[float] = field(default_factory=list)  # submit time per request index
    rejected: dict[int, str] = field(default_factory=dict)
    events: list[tuple[float, str, int, Any]] = field(default_factory=list)
    after_shutdown: int = 0  # index into events where shutdown() began
    calls: list[dict[str, Any]] = field(default_factory=list)  # the probe's raw call record
    steps: int = 0
    multi_call_steps: int = 0
    stuck: str = ""
    crash: str = ""  # a poison request's exception escaped step() and took the engine down
    error_steps: list[int] = field(default_factory=list)  # steps in which a forward raised
    # (time, index, what cancel returned, len(events) before the call, len(events) after it)
    cancels: list[tuple[float, int, Any, int, int]] = field(default_factory=list)
    empty_step: tuple[Any, int] = (None, 0)  # step() before any submit: (returned, calls)
    markers: list[int] = field(default_factory=list)  # prompt[0] per request index


def replay(
    engine_cls: Any,
    model: Any,
    arrivals: list[Arrival],
    *,
    max_batch_size: int,
    max_wait_s: float,
    continuous: bool = False,
    kv_budget_tokens: int | None = None,
    clock: Callable[[], float] | None = None,
    advance: Callable[[float], None] | None = None,
    shutdown_at: float | None = None,
    cancels: list[tuple[float, int]] | None = None,
    tick: float = TICK_S,
    max_steps: int = MAX_STEPS,
) -> Replay:
    """Drive `engine_cls` through `arrivals`; returns the record. `advance=None` means a wall
    clock (idle steps sleep instead). `cancels`: (time, request index) pairs; index -1 cancels an
    id no request has."""
    scheduled = [t for t, _ in cancels or []] + ([shutdown_at] if shutdown_at else [])
    max_steps = step_budget(arrivals, max_wait_s, tick, max_steps, max(scheduled, default=0.0))
    fake = None
    if clock is None:
        fake = FakeClock()
        clock, advance = fake, fake.advance
    out = Replay(markers=[a.request.prompt[0] if a.request.prompt else -1 for a in arrivals])
    ids: dict[int, int] = {}
    open_ids: set[int] = set()
    submitting: list[int] = []  # the index being submitted (events may come from inside submit)

    def sink(event: Any) -> None:
        rid = getattr(event, "request_id", None)
        if isinstance(rid, int) and rid not in ids and submitting:
            ids[rid] = submitting[0]
        index = ids.get(rid, -1) if isinstance(rid, int) else -1
        if index < 0:
            out.events.append((clock(), "stray", -1, repr(event)[:200]))
        elif hasattr(event, "token"):
            out.events.append((clock(), "token", index, int(event.token)))
        else:
            out.events.append((clock(), "finish", index, str(getattr(event, "reason", "?"))))
            open_ids.discard(index)

    engine = engine_cls(model, max_batch_size=max_batch_size, max_wait_s=max_wait_s, clock=clock,
                        on_event=sink, continuous=continuous, kv_budget_tokens=kv_budget_tokens)
    calls_of = _call_counter(model)
    before = calls_of()
    out.empty_step = (engine.step(), calls_of() - before)
    model_charges = getattr(model, "clock_advance", None) is not None  # else: 1 tick per step
    i, steps = 0, 0
    out.submitted = [math.nan] * len(arrivals)
    todo = sorted(cancels or [])
    rid_of: dict[int, int] = {}
    while True:
        while i < len(arrivals) and arrivals[i].t <= clock() + 1e-12:
            out.submitted[i] = clock()
            open_ids.add(i)
            submitting[:] = [i]
            try:
                rid = engine.submit(arrivals[i].request)
                rid_of[i] = rid
                if ids.setdefault(rid, i) != i:
                    out.events.append((clock(), "stray", -1, f"submit returned id {rid!r} "
                                       f"for request {i}, already used for request {ids[rid]}"))
                    open_ids.discard(i)  # its events cannot be told apart: do not wait for it
            except ValueError as exc:
                out.rejected[i] = str(exc)
                open_ids.discard(i)
            finally:
                submitting.clear()
            i += 1
        while todo and todo[0][0] <= clock() + 1e-12:
            index = todo.pop(0)[1]
            before = len(out.events)
            result = engine.cancel(rid_of.get(index, UNKNOWN_ID))
            out.cancels.append((clock(), index, result, before, len(out.events)))
        if shutdown_at is not None and clock() >= shutdown_at:
            break
        if not open_ids:
            upcoming = [arrivals[i].t] if i < len(arrivals) else []
            upcoming += [todo[0][0]] if todo else []
            if not upcoming:
                break
            _wait_until(min(upcoming), clock, advance)
            continue
        if hasattr(model, "step_index"):
            model.step_index = steps
        before, raised = calls_of(), getattr(model, "raised", 0)
        try:
            busy = engine.step()
        except Exception as exc:
            if getattr(model, "raised", 0) == raised:
                raise  # the engine's own bug: let the sandbox show the traceback
            out.crash = f"{type(exc).__name__}: {exc}"
            break
        steps += 1
        if getattr(model, "raised", 0) != raised:
            out.error_steps.append(steps - 1)
        elif calls_of() - before > 1:
            out.multi_call_steps += 1
        if not busy or (advance is not None and not model_charges):
            _wait_until(clock() + tick, clock, advance)
        if steps >= max_steps:
            out.stuck = (f"after {steps} steps (clock {clock():.3f} s) requests "
                         f"{sorted(open_ids)[:10]} never finished: the engine stopped making "
                         "progress while they were queued or running")
            break
    out.steps = steps
    out.after_shutdown = len(out.events)
    engine.shutdown()
    if hasattr(model, "calls") and isinstance(model.calls, list):
        out.calls = list(model.calls)
    return out


def _call_counter(model: Any) -> Callable[[], int]:
    calls = getattr(model, "calls", None)
    if isinstance(calls, list):
        return lambda: len(model.calls)
    return lambda: int(getattr(model, "calls", 0))


def _wait_until(t: float, clock: Callable[[], float], advance: Callable[[float], None] | None,
                ) -> None:
    now = clock()
    if t <= now:
        return
    if advance is not None:
        advance(t - now)
    else:
        time.sleep(t - now)


# -- traces -------------------------------------------------------------------------------------
def poisson_trace(
    seed: int, n: int, rate_per_s: float, prompt_len: tuple[int, int],
    max_tokens: tuple[int, int], vocab: tuple[int, int], first_marker: int | None = None,
) -> list[dict[str, Any]]:
    """Seeded Poisson arrivals with uniform prompt lengths and output lengths (case params)."""
    rng = random.Random(seed)
    t = 0.0
    out = []
    for k in range(n):
        t += rng.expovariate(rate_per_s)
        length = rng.randint(*prompt_len)
        prompt = [rng.randrange(*vocab) for _ in range(length)]
        if first_marker is not None:
            prompt[0] = first_marker + k
        out.append({"t": round(t, 6), "prompt": prompt, "max_tokens": rng.randint(*max_tokens)})
    return out
