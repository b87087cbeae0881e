"""batch-engine's judge for every level: one raw record from `drive.run`, judged in order.

The order matters for the message: an empty step, duplicate ids, a stuck or crashed engine, then
validation, malformed model inputs, one forward per step, the stream, cancellations, the
outputs, the batching policy from the probe's record (what every level obeys, then what the
case's features add: level 1's static batches, level 2's re-forming, level 3's KV budget) and
the load figures.
"""

from __future__ import annotations

import math
from typing import Any

from lab.exercises.batch_engine.grading import level1, level2, level3, level4
from lab.exercises.batch_engine.grading.common import (
    EPS_S,
    Fail,
    check_fifo,
    check_kv_reuse,
    check_outputs,
    check_rejections,
    check_stream,
    check_waiting,
    dups,
    expected_outputs,
    latency_stats,
    view,
)
from lab.grader.api import Case, Verdict
from questions.wording import noun, plural


def check(case: Case, got: Any, expected: Any) -> Verdict:
    assert isinstance(got, dict) and isinstance(expected, dict)
    p = case.params
    notes: list[str] = []
    metrics: dict[str, float] = {}
    try:
        returned, calls = got["empty_step"]
        if returned or calls:
            raise Fail(f"step() on an engine with nothing submitted returned {returned!r} and "
                       f"made {plural(calls, 'model call')}: with an empty queue there is "
                       f"nothing to "
                       "run — return False (the caller then waits instead of spinning)")
        dup = [e[3] for e in got["events"]
               if e[1] == "stray" and str(e[3]).startswith("submit returned id")]
        if dup:
            raise Fail(f"{dup[0]}: two requests got the same id — every submit returns a new "
                       "id (identical requests are still two requests, and an id is never "
                       "reused, also after its request finished)")
        if got["stuck"]:
            if p["model"] == "probe" and not p.get("same_markers"):  # a policy mistake that
                # led there names the cause
                g = view(case, got, expected)
                _check_policy(p, g["reqs"], g)
            raise Fail(got["stuck"])
        if got.get("crash"):
            raise Fail(f"step() raised {got['crash']} — one poison request must fail alone: "
                       "catch the error, find the requests at fault (e.g. retry each row "
                       "alone), finish them with 'error' and keep serving the rest")
        g = view(case, got, expected)
        reqs = g["reqs"]
        check_rejections(p, reqs, g)  # first: a bad id the engine fed names the validation
        if g["violations"]:
            raise Fail("the model saw malformed inputs: " + g["violations"][0]
                       + (f" (+{len(g['violations']) - 1} more)"
                           if len(g["violations"]) > 1 else ""))
        if g["multi_call_steps"]:
            raise Fail(f"{g['multi_call_steps']} step() calls made more than one model call: "
                       "each step makes one forward over the whole running batch (newcomers "
                       "prefill inside it)")
        streams = check_stream(reqs, g, p)
        outputs = expected_outputs(case, reqs, expected)
        level4.check_cancels(reqs, g, streams)
        check_outputs(case, reqs, g, streams, outputs, notes, metrics, expected.get("truth"))
        if p["model"] == "probe" and not p.get("same_markers"):
            _check_policy(p, reqs, g)  # (identical requests: the record cannot tell them apart)
        if "load" in p["checks"]:
            stats = latency_stats(got["submitted"], got["events"])
            ref = latency_stats(expected["submitted"], expected["events"])
            metrics.update({f"learner_{k}": v for k, v in stats.items()})
            metrics.update({f"reference_{k}": v for k, v in ref.items()})
            metrics["p95_ratio"] = stats["e2e_p95_s"] / max(ref["e2e_p95_s"], 1e-9)
            metrics["ttft_p95_ratio"] = stats["ttft_p95_s"] / max(ref["ttft_p95_s"], 1e-9)
            notes.append(
                f"p95 end-to-end {stats['e2e_p95_s'] * 1e3:.0f} ms vs reference "
                f"{ref['e2e_p95_s'] * 1e3:.0f} ms (x{metrics['p95_ratio']:.2f}); p95 TTFT "
                f"{stats['ttft_p95_s'] * 1e3:.0f} vs {ref['ttft_p95_s'] * 1e3:.0f} ms; "
                f"{stats['tok_per_s']:.0f} vs {ref['tok_per_s']:.0f} tok/s (virtual time)")
    except Fail as exc:
        return Verdict(False, str(exc), metrics)
    return Verdict(True, "; ".join(notes), metrics)


def _check_no_stall(calls: list[Any], index: dict[int, int], finish_t: dict[int, float]) -> None:
    """Every row of a call feeds at least one real token: a running request in the batch whose
    row is all padding made no progress that step (its decode stalled, e.g. behind a newcomer's
    prefill) while holding a slot."""
    for n, (t0, _width, rows, _step) in enumerate(calls):
        for marker, new, _after in rows:
            who = index.get(marker)
            if new or who is None or finish_t.get(who, math.inf) <= t0:
                continue
            busy = [index.get(m, m) for m, k, _ in rows if k]
            raise Fail(f"model call {n} at t={t0:.3f} s: running request {who} was in the batch "
                       f"but fed no token (its row was all padding) while requests {busy} fed "
                       "theirs — its decode stalled for that step. Every running request decodes "
                       "one token at every step, in the same call as the newcomers' prefill")


def _early_or_late(p: dict[str, Any], got: dict[str, Any], t0: float, at: float) -> str:
    """Why a first batch went at t0 instead of `at`: a cancelled request that still counted
    (as the head's deadline, or toward the size trigger), or a deadline missed by a tick."""
    if t0 > at:
        return (" — one scheduler tick late: a batch goes on the tick where the oldest has "
                "waited exactly max_wait (`>=`, not `>`)" if "exact" in p["checks"] else "")
    gone = [i for ct, i, ok, *_ in got.get("cancels", []) if ok is True and ct < t0]
    if not gone:
        return ""
    submitted = got["submitted"]
    live = [r for r in range(len(submitted)) if submitted[r] <= t0 + 1e-9 and r not in gone
            and r not in got["rejected"]]
    if live and min(submitted[r] for r in live) <= min(submitted[r] for r in gone) and \
            len(live) < p["max_batch_size"]:
        return (f" — {noun(len(gone), 'request')} {gone} was cancelled while queued "
                f"behind the head: only {len(live)} live requests were queued, one short of "
                f"max_batch_size {p['max_batch_size']}; a cancelled request leaves the queue "
                "and no longer counts toward the size trigger")
    return (" — a request cancelled while it waited leaves no deadline behind: the wait runs "
            "from the oldest still-queued request's submit")


def _check_policy(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any]) -> None:
    """The batching policy, from the probe's record: what every level obeys, then what the
    case's features add (static: run to completion; continuous: re-formed every step; a KV
    budget: held, used for admission, preemption; named checks: first batch, lone request)."""
    B, wait = p["max_batch_size"], p["max_wait_s"]
    calls, rows_of, index = got["policy_calls"], got["rows_of"], got["index"]
    finish_t, submitted = got["finish_t"], got["submitted"]
    for n, (c, rows) in enumerate(zip(calls, rows_of, strict=True)):
        if len(c[2]) > B:
            raise Fail(f"model call {n} at t={c[0]:.3f} s ran {len(c[2])} rows, over "
                       f"max_batch_size {B} (requests {rows})")
        if len(set(rows)) != len(rows):
            left = [(index[m], held) for m, new, held in c[2]
                    if not new and index.get(m) in dups(rows)]
            if left:  # a row that only holds a request's old KV, beside the request running
                who, held = left[0]
                raise Fail(f"model call {n}: request {who} runs in one row while another row, "
                           "which feeds nothing, still attends to its "
                           f"{plural(held, 'old KV token')} — a preempted request gives up "
                           "its row: drop the row (or zero its whole mask row) when preempting "
                           "it, so that only its recompute, in an empty row, holds its KV")
            raise Fail(f"model call {n} has {noun(len(dups(rows)), 'request')} {dups(rows)} "
                       f"in two rows at once")
    recomputed = check_kv_reuse(p, got, calls, index, finish_t)
    if p["kv_budget_tokens"] is not None:
        level3.check_budget(p, reqs, got, calls, rows_of, finish_t, recomputed)
    _check_no_stall(calls, index, finish_t)  # after the budget: a paused row names that first
    for c in p["checks"]:
        name, _, arg = c.partition(":")
        if name == "first_call_at":
            at, _, who = arg.partition(":")
            want = [int(x) for x in who.split(",")]
            if not calls:
                raise Fail("the model was never called")
            t0, first = calls[0][0], rows_of[0]
            if sorted(first) != sorted(want):  # the order of the rows inside a call is free
                raise Fail(f"the first batch should be requests {want} in arrival order, got "
                           f"{first} (FIFO: the oldest go first; the order of the rows inside "
                           "a call does not matter)")
            exact = "exact" in p["checks"]
            if abs(t0 - float(at)) > (1e-9 if exact else EPS_S):
                raise Fail(f"the first batch went at t={t0:.3f} s, expected t={float(at):.3f} "
                           f"s (max_batch_size {B}, max_wait {wait * 1e3:g} ms, "
                           "size or wait, whichever comes first)"
                           + _early_or_late(p, got, t0, float(at)))
        elif name == "lone":
            if not calls:
                raise Fail(f"a lone request submitted at t={submitted[0]:.3f} s was never "
                           f"dispatched: it goes once it has waited max_wait "
                           f"({wait * 1e3:g} ms)"
                           + (" — max_wait 0 is a duration (go at once), not 'no wait "
                               "configured' (`if max_wait_s:` is false for 0)" if not wait
                               else ""))
            t0, due = calls[0][0], submitted[0] + wait
            if t0 < due - 1e-9:
                raise Fail(f"a lone request submitted at t={submitted[0]:.3f} s was dispatched "
                           f"at t={t0:.3f} s, before max_wait ({wait * 1e3:g} ms) had passed — "
                           "a partial batch waits for more requests until the oldest has "
                           "waited max_wait")
            if t0 > due + (1e-9 if "exact" in p["checks"] else EPS_S):
                raise Fail(f"a lone request submitted at t={submitted[0]:.3f} s was dispatched "
                           f"at t={t0:.3f} s, {(t0 - due) * 1e3:.0f} ms after its max_wait "
                           f"({wait * 1e3:g} ms) ran out"
                           + (f" at t={due:.3f} s: one scheduler tick late — the oldest request "
                              "has waited max_wait on the tick where now - submit == max_wait "
                              "(exactly max_wait counts as waited: `>=`, not `>`; this case's "
                              "times are exact binary fractions, so the comparison decides)"
                              if "exact" in p["checks"] else ""))
    check_fifo(reqs, got, rows_of)
    check_waiting(p, reqs, got, calls, rows_of, finish_t)
    if p["continuous"] and "reformed" in p["checks"]:
        level2.check_reformed(p, reqs, got, calls, rows_of, finish_t)
    if not p["continuous"]:
        level1.check_static(calls, rows_of, finish_t)
