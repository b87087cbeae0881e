"""Level 4: cancellation and poison requests.

Boundaries, special values and feature pairs, and the case that covers each:
- cancel request id 0 while it runs (cancel-id-zero: `if not request_id` is false for 0);
- cancel a queued request (cancel-queued), a running one (cancel-running), a finished one and an
  id no request has (cancel-finished-or-unknown: False, no event); the abort is sent from inside
  `cancel()` (checked by event order in every cancel case, not by time);
- two events in one step: two running requests cancelled between the same two steps
  (cancel-two-running: a row index remembered from the last step points at the wrong row once
  the first cancel has dropped its row);
- cancel x state: the same request cancelled twice (running: twice at one moment, then later;
  queued: twice) - only the first returns True (cancel-twice); a request finished by stop, by
  length, at submit (max_tokens 0) and by error (poison) (cancel-finished-any-reason);
- cancel of a preempted request waiting to resume (cancel-preempted); cancel of the only
  queued request while its max_wait runs: the next arrival's wait starts at its own submit
  (cancel-pending-wait: a timer whose owner went away); cancel of a queued request behind the
  head while the queue is one short of max_batch_size, then an arrival: the cancelled one no
  longer counts toward the size trigger (cancel-behind-the-head);
- cancel + KV budget: the cancelled row's KV is free at once, so a request waiting for KV joins
  at the next step (cancel-frees-kv);
- poison alone in a fresh batch (poison-fails-alone), joining a running batch
  (poison-joins-a-running-batch: the rerun in the same step keeps the others' KV: the cache
  reuse check applies to the rerun too); cancels and a poison request together on seeded
  arrivals (hidden-robust).
"""

from __future__ import annotations

import math
import random
from typing import Any

from lab.exercises.batch_engine import probe
from lab.exercises.batch_engine.grading.common import Fail
from lab.exercises.batch_engine.grading.common import make_case as _case
from lab.exercises.batch_engine.grading.common import probe_request as _req
from lab.grader.api import Case


def _poisoned(k: int, length: int, max_tokens: int, t: float = 0.0) -> dict[str, Any]:
    req = _req(k, length, max_tokens, t)
    req["prompt"][length // 2 if length > 1 else 0] = probe.POISON
    return req


def _finished_any_reason() -> list[dict[str, Any]]:
    """Request 0 stops on a stop token, 1 runs to max_tokens, 2 has max_tokens 0, 3 is poison."""
    first = _req(0, 4, 8)
    stop = probe.solo(first["prompt"], 8)[0][2]
    return [{**first, "stop_ids": [stop]}, _req(1, 3, 3), _req(2, 3, 0), _poisoned(3, 4, 5)]


def _level4_fixed() -> list[Case]:
    return [
        _case("cancel-queued", 4, "cancel a queued request: one `abort`, it never runs, the "
              "others are unchanged", [_req(0, 4, 12), _req(1, 3, 5, t=0.001),
                                       _req(2, 3, 4, t=0.002)], B=1, wait=0.01,
              cancels=[(0.02, 1)]),
        _case("cancel-running", 4, "cancel a running request: one `abort`, its row leaves at the "
              "next step and the queued request takes the slot",
              [_req(0, 4, 20), _req(1, 6, 20), _req(2, 2, 20), _req(3, 3, 6, t=0.001)], B=3,
              cancels=[(0.08, 1)], checks=("reformed",)),
        _case("cancel-id-zero", 4, "cancel request 0 (the first id, 0) while it runs: True, one "
              "`abort`, and request 1 runs on alone", [_req(0, 4, 20), _req(1, 3, 6)], B=2,
              cancels=[(0.03, 0)], checks=("reformed",)),
        _case("cancel-finished-or-unknown", 4, "cancel a finished request or an unknown id: "
              "returns False, no event", [_req(0, 3, 2)], B=1, wait=0.0,
              cancels=[(0.2, 0), (0.2, -1)]),
        _case("cancel-twice", 4, "cancel the same request twice: a running one twice at the "
              "same moment and once more later, a queued one twice; only the first cancel "
              "returns True and sends the one `abort`", [_req(0, 4, 20), _req(1, 3, 20),
                                                       _req(2, 3, 6, t=0.001),
                                                       _req(3, 5, 4, t=0.002)], B=2,
              cancels=[(0.02, 1), (0.02, 1), (0.02, 3), (0.025, 3), (0.04, 1)]),
        _case("cancel-two-running", 4, "two running requests (rows 1 and 2 of 4) cancelled "
              "between the same two steps: each True with one `abort`, both rows leave at the "
              "next step, the other two run on unchanged",
              [_req(0, 4, 20), _req(1, 5, 20), _req(2, 3, 20), _req(3, 6, 20)], B=4,
              cancels=[(0.05, 1), (0.05, 2)], checks=("reformed",)),
        _case("cancel-finished-any-reason", 4, "cancel requests after they finished by `stop`, "
              "by `length`, at submit (max_tokens 0) and by `error` (poison): each returns "
              "False and sends nothing", _finished_any_reason(), B=4,
              cancels=[(0.3, 0), (0.3, 1), (0.3, 2), (0.3, 3), (0.3, -1)]),
        _case("cancel-preempted", 4, "KV budget 60: request 3 is preempted (back in the queue, "
              "with tokens already streamed) and cancelled before it resumes: True, one `abort`, "
              "it never runs again", [_req(k, 8, 20) for k in range(4)], B=4, budget=60,
              cancels=[(0.13, 3)]),
        _case("cancel-pending-wait", 4, "max_wait 50 ms: the only queued request is cancelled "
              "while its wait runs; a request arriving at 30 ms waits its own 50 ms (goes at "
              "80 ms), not what was left of the cancelled one's", [_req(0, 4, 3), _req(1, 3, 3,
              t=0.03)], B=4, cancels=[(0.02, 0)], checks=("first_call_at:0.08:1",)),
        _case("cancel-behind-the-head", 4, "max_batch_size 4, max_wait 50 ms: requests 0, 1 "
              "and 2 queue at t=0 (one short of the size trigger); request 1, not the head, is "
              "cancelled at 10 ms and request 3 arrives at 20 ms: 3 live requests are queued, "
              "so the batch [0, 2, 3] goes when request 0 has waited 50 ms, not at 20 ms",
              [_req(0, 4, 3), _req(1, 3, 3), _req(2, 5, 3), _req(3, 3, 3, t=0.02)], B=4,
              cancels=[(0.01, 1)], checks=("first_call_at:0.05:0,2,3",)),
        _case("cancel-frees-kv", 4, "KV budget 24: a request waits for KV while two run; "
              "cancelling one frees its KV at once, so the waiting request joins at the next step",
              [_req(0, 8, 17), _req(1, 8, 5), _req(2, 8, 3, t=0.001)], B=4, wait=0.0,
              budget=24, cancels=[(0.015, 1)], checks=("reformed",)),
        _case("poison-fails-alone", 4, "one request in a batch of 4 breaks the model: it finishes "
              "with `error`, the other three complete unchanged",
              [_req(0, 5, 8), _req(1, 3, 8), _poisoned(2, 6, 8), _req(3, 4, 8)], B=4),
        _case("poison-joins-a-running-batch", 4, "a poison request joins a running batch "
              "(continuous): only it fails; nothing lost or duplicated",
              [_req(0, 5, 15), _req(1, 3, 15), _poisoned(2, 4, 5, t=0.07), _req(3, 4, 6, t=0.08)],
              B=4, checks=("reformed",)),
    ]


def _hidden_level4(seed: int) -> list[Case]:
    rng = random.Random(seed * 17 + 4)
    out = []
    for j in range(2):
        reqs, t = [], 0.0
        n = rng.randint(8, 14)
        bad = rng.randrange(n)
        for k in range(n):
            t += rng.expovariate(rng.choice([50.0, 200.0]))
            make = _poisoned if k == bad else _req
            reqs.append(make(k, rng.randint(2, 12), rng.choice([1, 4, 9, 17]), round(t, 4)))
        cancels = [(round(r["t"] + rng.uniform(0.0, 0.08), 4), k)
                   for k, r in enumerate(reqs) if k != bad and rng.random() < 0.25]
        out.append(_case(f"hidden-robust-{seed}-{j}", 4, "seeded arrivals with cancels and one "
                         "poison request", reqs, B=rng.choice([2, 3, 4]), wait=0.01,
                         cancels=cancels))
    return out


def check_cancels(reqs: list[dict[str, Any]], got: dict[str, Any],
                   streams: dict[int, tuple[list[int], list[str]]]) -> None:
    """cancel() is True exactly for a live request, which then gets its one abort from inside the
    call (between the events before and after it), and never runs again."""
    first_finish: dict[int, int] = {}  # request -> index of its first finish event
    for n, (_t, kind, idx, _) in enumerate(got["events"]):
        if kind == "finish":
            first_finish.setdefault(idx, n)
    for t, idx, ok, before, after in got.get("cancels", []):
        if idx < 0:
            if ok is not False:
                raise Fail(f"cancel() of an id no request has returned {ok!r}, expected False")
            continue
        first = first_finish.get(idx, math.inf)
        if ok is not True and first >= before:
            streamed = any(e[1] == "token" and e[2] == idx for e in got["events"][:before])
            raise Fail(f"cancel({idx}) at t={t:.3f} s returned {ok!r}, but the request was still "
                       "queued or running: expected True and one Finish 'abort'"
                       + (" — it had streamed tokens and was not finished: a preempted request "
                           "waiting to resume is queued, and cancel must find it there too"
                           if streamed else ""))
        if ok is True and first < before:
            raise Fail(f"cancel({idx}) at t={t:.3f} s returned True for a request that had "
                       "already finished: return False and send nothing")
        if ok is True:
            reasons = streams.get(idx, ([], []))[1]
            if not before <= first < after:
                when = ("never" if first == math.inf else
                        f"at t={got['events'][int(first)][0]:.3f} s, after cancel() returned")
                raise Fail(f"cancel({idx}) at t={t:.3f} s returned True but sent no finish event "
                           f"from inside the call (its finish came {when}): send "
                           "Finish(id, 'abort') from cancel() itself, before it returns")
            if reasons[:1] != ["abort"]:
                raise Fail(f"cancel({idx}) at t={t:.3f} s sent {reasons[:1]}, expected "
                           "Finish(id, 'abort')")
            later = [n for n, c in enumerate(got["calls"]) if c[0] > t
                     and any(row[0] == reqs[idx]["prompt"][0] for row in c[2])]
            if later:
                raise Fail(f"request {idx} was cancelled at t={t:.3f} s but still ran in model "
                           f"call {later[0]}: free its slot (drop its row) at once")


def cases(seed: int) -> list[Case]:
    return _level4_fixed() + _hidden_level4(seed)
