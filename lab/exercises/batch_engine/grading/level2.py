"""Level 2: continuous batching.

Boundaries, special values and feature pairs, and the case that covers each:
- a slot freed by a finish is refilled at the very next step (refill-next-step), a request
  arriving mid-batch joins at the next step, not after max_wait (join-a-running-batch);
- refilled rows see only their own KV, many refills, mixed lengths (refilled-slots-many);
- a newcomer's prefill (long: several chunks) beside running decodes: every running row feeds a
  token at every step, no stall (prefill-beside-decode; the no-stall check runs on every case);
- an idle engine still waits by size or wait, on the exact tick (idle-deadline-on-the-tick);
- shutdown mid-run (shutdown-continuous); seeded arrivals (hidden-probe-*), the load gate
  (load-poisson-35-per-s), the real target (target-mixed-continuous).
"""

from __future__ import annotations

import math
from typing import Any

from lab.exercises.batch_engine.grading.common import (
    Fail,
    hidden_probe,
    load_case,
    target_cases,
)
from lab.exercises.batch_engine.grading.common import make_case as _case
from lab.exercises.batch_engine.grading.common import probe_request as _req
from lab.grader.api import Case
from questions.wording import noun


def _level2_fixed() -> list[Case]:
    return [
        _case("refill-next-step", 2, "B=2: when a request finishes, the queued one joins at the "
              "very next step", [_req(0, 3, 3), _req(1, 5, 12), _req(2, 4, 6), _req(3, 2, 4)],
              B=2, checks=("reformed",)),
        _case("join-a-running-batch", 2, "a request arriving while the batch runs joins at the "
              "next step instead of waiting for the batch (or max_wait)",
              [_req(0, 4, 20), _req(1, 6, 20, t=0.06), _req(2, 2, 9, t=0.08)], B=4, wait=0.05,
              checks=("reformed",)),
        _case("refilled-slots-many", 2, "B=3, 12 requests of mixed lengths: each refilled row "
              "must see only its own KV", [_req(k, 1 + (k * 5) % 13, 1 + (k * 7) % 11)
                                           for k in range(12)], B=3, checks=("reformed",)),
        _case("prefill-beside-decode", 2, "a 20-token prompt joins a decoding request: while "
              "it prefills (in one call or in chunks) the running request still decodes one "
              "token at every step", [_req(0, 3, 20), _req(1, 20, 4, t=0.03)], B=2,
              checks=("reformed",)),
        _case("idle-deadline-on-the-tick", 2, "an idle continuous engine: a lone request at "
              "t=0.25 s with max_wait 125 ms (exact binary fractions) goes on the very tick its "
              "wait runs out, t=0.375 s, not one 1 ms tick later", [_req(0, 4, 2, t=0.25)],
              wait=0.125, checks=("lone", "exact")),
        _case("shutdown-continuous", 2, "shutdown() mid-run: one finish event per request",
              [_req(k, 3 + k, 25, t=0.01 * k) for k in range(7)], B=3, wait=0.02,
              shutdown_at=0.1, checks=("shutdown",)),
    ]


def check_reformed(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any],
                    calls: list[Any], rows_of: list[list[int]],
                    finish_t: dict[int, float]) -> None:
    """Continuous: every step re-forms the batch; a free slot is refilled at the next step."""
    B, budget = p["max_batch_size"], p["kv_budget_tokens"]
    admitted_at: dict[int, int] = {}
    preempted: dict[int, int] = {}
    for n in range(len(calls)):
        t0 = calls[n][0]
        rows = rows_of[n]
        prev = rows_of[n - 1] if n else []
        unfinished = [r for r in prev if finish_t.get(r, math.inf) > t0]
        gone = [r for r in unfinished if r not in rows]
        for r in rows:
            if r not in prev:
                admitted_at[r] = n
        if gone:
            if budget is None:
                raise Fail(f"model call {n} at t={t0:.3f} s dropped unfinished "
                           f"{noun(len(gone), 'request')} {gone}: every running request takes "
                           f"part in every step")
            kept = [r for r in unfinished if r in rows]
            newest_kept = max((admitted_at.get(r, -1) for r in kept), default=-1)
            for r in gone:
                if admitted_at.get(r, -1) < newest_kept:
                    raise Fail(f"model call {n} preempted request {r} while a newer request "
                               f"was kept running — preempt the newest (latest admitted)")
                preempted[r] = n
        if not unfinished:
            continue  # idle engine: the size-or-wait rule applies (checked elsewhere)
        waiting = [r for r in range(len(reqs)) if got["submitted"][r] <= t0 + 1e-9
                   and r not in got["rejected"] and reqs[r]["max_tokens"] > 0
                   and r not in rows and finish_t.get(r, math.inf) > t0]
        fresh = [r for r in rows if r not in prev]
        waiting_preempted = [r for r in waiting if r in preempted]
        if waiting_preempted and any(r not in preempted for r in fresh):
            jumped = [r for r in fresh if r not in preempted]
            raise Fail(f"model call {n} admitted {jumped} while preempted "
                       f"{noun(len(waiting_preempted), 'request')} {waiting_preempted} waited "
                       f"— a preempted request goes back to the "
                       "front of the queue")
        _check_resume_order(n, got, [r for r in fresh if r in preempted], waiting_preempted,
                            preempted)
        if waiting and len(rows) < B and budget is None:
            raise Fail(f"model call {n} at t={t0:.3f} s ran {len(rows)} of {B} rows while "
                       f"{noun(len(waiting), 'request')} {waiting[:5]} "
                       f"{noun(len(waiting), 'was', 'were')} queued — in continuous batching "
                       "a free slot is refilled at the next step")


def _check_resume_order(n: int, got: dict[str, Any], resumed: list[int], waiting: list[int],
                        preempted: dict[int, int]) -> None:
    """Requests preempted (in one step or several) resume in arrival order: each went back to
    the front of the queue, so the older one is ahead and nobody overtakes it."""
    def arrival(r: int) -> tuple[float, int]:
        return (got["submitted"][r], r)

    for r in resumed:
        older = sorted((w for w in waiting if arrival(w) < arrival(r)), key=arrival)
        if older:
            same = [w for w in older if preempted[w] == preempted[r]]
            raise Fail(f"model call {n} resumed preempted request {r} while request {older[0]}, "
                       "preempted "
                       + (f"in the same step (call {preempted[r]})" if same else "too")
                       + " and submitted before it, still waited — requests preempted together "
                       "resume oldest first: each goes back to the front of the queue in "
                       "arrival order (preempting the newest first, put each one in front of "
                       "the one preempted before it)")


def cases(seed: int) -> list[Case]:
    return (_level2_fixed() + hidden_probe(2, seed) + [load_case(2, seed, 35.0)]
            + target_cases(2, seed))
