"""Level 3: memory-aware admission (a KV budget, preemption).

Boundaries, special values and feature pairs, and the case that covers each:
- a request needing exactly the whole budget alone (prompt + max_tokens - 1 = budget: accepted,
  and it runs) and one token more (rejected) (budget-exact-fit, budget-too-small-rejected);
- the head of the queue fitting exactly (held + what it feeds = budget: it joins at that step)
  (budget-exact-fit), and not fitting by one: it waits for KV, not for a slot
  (budget-admission);
- a running batch that grows to exactly the budget: nobody is preempted (budget-exact-growth);
- preemption: forced by growth (budget-forces-preemption), while other requests wait: the
  preempted request goes back to the front and resumes before them (preempt-while-others-wait);
  a preempted request keeps the tokens it streamed (every preemption case: outputs equal solo);
- two events in one step: two requests preempted in the same step resume oldest first, one at
  a time as room comes back (preempt-two-in-one-step);
- budget + chunked prefill or whole-prompt admission: the admission check allows either;
- budget + load (load-poisson, budget 300) and + the real target (target-mixed-continuous).
"""

from __future__ import annotations

import math
from typing import Any

from lab.exercises.batch_engine.grading.common import (
    Fail,
    dropped,
    hidden_probe,
    load_case,
    target_cases,
)
from lab.exercises.batch_engine.grading.common import make_case as _case
from lab.exercises.batch_engine.grading.common import probe_request as _req
from lab.grader.api import Case
from questions.wording import noun


def _level3_fixed() -> list[Case]:
    return [
        _case("budget-forces-preemption", 3, "4 requests of 8 prompt tokens growing to 28 under a "
              "60-token KV budget: admit what fits, preempt the newest when the batch cannot "
              "grow, requeue it first and recompute; outputs unchanged",
              [_req(k, 8, 20) for k in range(4)], B=4, budget=60,
              checks=("reformed", "preempts")),
        _case("budget-admission", 3, "a budget that fits two prompts: the third waits for KV, "
              "not for a slot", [_req(0, 10, 4), _req(1, 10, 4), _req(2, 10, 4)], B=4,
              budget=26, checks=("reformed",)),
        _case("budget-exact-fit", 3, "KV budget 16: two 8-token prompts fill it exactly and run "
              "together; a request needing exactly 16 KV tokens alone (8 + 9 - 1) is accepted "
              "and runs; one needing 17 is rejected",
              [_req(0, 8, 1), _req(1, 8, 1), _req(2, 8, 9), _req(3, 8, 10)], B=4, budget=16,
              checks=("rejects:3", "reformed")),
        _case("preempt-while-others-wait", 3, "B=2, KV budget 30: two growing requests force a "
              "preemption while two short ones wait; the preempted request goes back to the "
              "front of the queue and resumes before them",
              [_req(0, 6, 14), _req(1, 6, 14), _req(2, 4, 4, t=0.001), _req(3, 4, 4, t=0.001)],
              B=2, budget=30, checks=("reformed", "preempts")),
        _case("budget-exact-growth", 3, "KV budget 24: two 8-token prompts decode 5 tokens "
              "each and end holding exactly 12 + 12 = 24: the batch fits, so nobody is "
              "preempted", [_req(0, 8, 5), _req(1, 8, 5)], B=2, budget=24,
              checks=("reformed",)),
        _case("preempt-two-in-one-step", 3, "KV budget 12: four requests fill it exactly "
              "(8 + 2 + 1 + 1); at the next step the batch cannot grow, so the two newest "
              "(3, then 2) are preempted in that one step; room comes back for one at a time: "
              "request 2, which arrived first, resumes first, then 3",
              [_req(0, 8, 3), _req(1, 2, 2), _req(2, 1, 6), _req(3, 1, 6)], B=4, budget=12,
              checks=("reformed", "preempts")),
        _case("budget-too-small-rejected", 3, "a request that could never fit the budget alone is "
              "rejected by submit", [_req(0, 30, 20), _req(1, 4, 4)], B=2, budget=40,
              checks=("rejects:0",)),
    ]


def _check_budget_admission(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any],
                            calls: list[Any], rows_of: list[list[int]],
                            finish_t: dict[int, float]) -> None:
    """Level 3: the budget caps what the cache holds; it is no reason to run fewer requests. In
    every call with a free row, the head of the queue (the earliest arrival still waiting) must
    have joined if it fitted: the KV tokens the call leaves plus everything the head would feed
    (its prompt, plus the tokens it had produced if it was preempted) within the budget. That is
    the most a newcomer can need (chunked prefill feeds less), so it holds for any engine that
    admits from the front whatever fits."""
    B, budget = p["max_batch_size"], p["kv_budget_tokens"]
    produced: dict[int, list[float]] = {}
    for t, kind, idx, _ in got["events"]:
        if kind == "token":
            produced.setdefault(idx, []).append(t)
    for n, (c, rows) in enumerate(zip(calls, rows_of, strict=True)):
        t0 = c[0]
        if len(c[2]) >= B:
            continue
        waiting = [r for r in range(len(reqs)) if got["submitted"][r] <= t0 + 1e-9
                   and r not in got["rejected"] and reqs[r]["max_tokens"] > 0
                   and r not in rows and finish_t.get(r, math.inf) > t0]
        if not waiting:
            continue
        head = min(waiting, key=lambda r: (got["submitted"][r], r))
        done = sum(1 for t in produced.get(head, []) if t <= t0 + 1e-9)
        need = len(reqs[head]["prompt"]) + done
        held = sum(r[2] for r in c[2])
        if held + need <= budget:
            what = f"its prompt plus the {done} tokens it had produced" if done else "its prompt"
            cancelled = [i for ct, i, ok, *_ in got.get("cancels", []) if ok is True and ct <= t0
                         and any(ev[2] == i and ev[1] == "token" for ev in got["events"])]
            freed = (f" ({noun(len(cancelled), 'request')} {cancelled} "
                     f"{noun(len(cancelled), 'was', 'were')} cancelled while running: their KV "
                     "is free at once)") if cancelled else ""
            raise Fail(f"model call {n} at t={t0:.3f} s ran {len(c[2])} of {B} rows, leaving "
                       f"{held} of the {budget} KV tokens in use, while request {head} at the "
                       f"head of the queue needed {need} ({what}): it fits, so it joins at this "
                       "step — admit from the front of the queue whatever fits the budget (the "
                       "budget caps the KV held; it is no reason to run fewer requests, or to "
                       f"reserve room for tokens not generated yet){freed}")


def _check_needless_preemption(p: dict[str, Any], got: dict[str, Any], calls: list[Any],
                               rows_of: list[list[int]], finish_t: dict[int, float]) -> None:
    """A decoding request (it fed one token in the previous call, so it feeds one in this one)
    leaves the batch unfinished, or restarts from an empty row, only when the batch cannot grow:
    if the KV of the rows that stayed, plus what that request and the call's other decoding
    victims held and one new token each, fits the budget, the preemption was needless (a
    cancelled request may leave, level 4). Rows that join in the call do not count: room is
    made before admission. A call that also preempted a prefilling row is not judged."""
    budget = p["kv_budget_tokens"]
    cancelled = {i for _ct, i, ok, *_ in got.get("cancels", []) if ok is True}

    def held_by(n: int, k: int = 2) -> dict[int, int]:
        return dict(zip(rows_of[n], (r[k] for r in calls[n][2] if r[0] in got["index"]),
                        strict=False))

    for n in range(1, len(calls)):
        t0 = calls[n][0]
        before, now, fed = held_by(n - 1), held_by(n), held_by(n - 1, 1)
        restarted = {r for r in now if now[r] <= before.get(r, 0)}  # KV dropped, recomputed
        victims = [r for r in rows_of[n - 1] if (r not in rows_of[n] or r in restarted)
                   and r not in cancelled and finish_t.get(r, math.inf) > t0]
        # room is made before anyone joins: what counts is the rows that stayed, plus the other
        # victims, any of which may have been preempted after this one (a row that joins in
        # this call, the head resumed with a first chunk included, does not count)
        stayed = sum(k for r2, k in now.items() if r2 in before and r2 not in restarted)
        for r in victims:
            others = [v for v in victims if v != r]
            if fed.get(r) != 1 or any(fed.get(v) != 1 for v in others):
                continue  # a prefilling victim's growth is its next chunk: not known here
            grown = stayed + sum(before.get(v, 0) + 1 for v in [r, *others])
            if grown <= budget:
                raise Fail(f"model call {n} at t={t0:.3f} s preempted request {r}"
                           + (" (and recomputed it at once)" if r in restarted else "")
                           + f", but the batch with it, grown by its next token, holds {grown} "
                           f"of the {budget} KV tokens: it fits — preempt only when the running "
                           "batch cannot grow within the budget (exactly at the budget fits)")


def cases(seed: int) -> list[Case]:
    return (_level3_fixed() + hidden_probe(3, seed) + [load_case(3, seed, 35.0)]
            + target_cases(3, seed))


def check_budget(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any],
                 calls: list[Any], rows_of: list[list[int]], finish_t: dict[int, float],
                 recomputed: int) -> None:
    """The budget holds after every call, a head that fits joins, and a case that needs a
    preemption gets one."""
    for n, c in enumerate(calls):
        held = sum(r[2] for r in c[2])
        if held > p["kv_budget_tokens"]:
            raise Fail(f"model call {n} leaves {held} KV tokens in the cache, over the "
                       f"budget of {p['kv_budget_tokens']} — admit only what fits and "
                       "preempt the newest when the running batch cannot grow")
    if p["continuous"]:
        _check_needless_preemption(p, got, calls, rows_of, finish_t)
        _check_budget_admission(p, reqs, got, calls, rows_of, finish_t)
    if "preempts" in p["checks"] and not recomputed and not dropped(calls, rows_of, finish_t):
        raise Fail(f"no request was ever preempted, but these {len(reqs)} requests cannot "
                   f"all grow to their length within the {p['kv_budget_tokens']}-token KV "
                   "budget — admit whatever fits, and when the running batch cannot grow by "
                   "one token each, preempt the newest running request (drop its row, put "
                   "it back at the front of the queue, recompute it later)")
