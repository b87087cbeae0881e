"""Level 1: dynamic batching (size or wait, run to completion).

Boundaries, special values and feature pairs, and the case that covers each:
- batch size: 0 queued (`step()` before any submit returns False, no call: every case),
  1 (lone-request-waits-max-wait), max_batch_size 1 (max-batch-one), exactly B
  (full-batch-goes-at-once), B + 1 (b-plus-one-fifo), 11 with B 4 (cap-never-exceeded);
- max_wait: a lone request goes exactly at submit + max_wait, not before, not after (lone-...);
  arrivals inside the window share it (window-shares-a-batch); max_wait 0 (max-wait-zero:
  `if self.max_wait_s` is false for 0, and it goes at its arrival's step, not a tick later);
  an arrival tied with the oldest's expiry joins its batch (arrival-at-wait-expiry); the
  deadline exactly on its tick, not one 1 ms tick late (deadline-on-the-tick: `>=` vs `>`, on
  exact binary-fraction times so the float comparison is exact);
- prompt length 1 and max_tokens 0, 1 (padding-mask-positions, conventions-stop-and-length);
- prompt + max_tokens exactly max_positions (accepted) and + 1 (rejected), with a long and a
  one-token prompt; token id vocab_size - 1 (accepted) and vocab_size (rejected)
  (max-positions-boundary); empty prompt, max_tokens -1 (bad-requests-rejected);
- stop token first / mid / on the max_tokens-th token (stop wins over length), a stop sequence
  spanning two tokens, also on the last allowed token (conventions-stop-and-length); a stop
  sequence whose first token ends the prompt is not matched across it (stop-sequence-output-only);
- id 0: a stop token of id 0 (the shipped target's EOS is 0) and id 0 inside a prompt
  (eos-id-zero: the probe emits 0 there as a real token);
- static + a request arriving mid-batch: it waits for the whole batch (static-runs-to-completion);
- shutdown with requests queued and running (shutdown-mid-run);
- ids: two identical requests (same prompt, same settings) are two requests with two ids and two
  streams (identical-requests); an id is never reused, also once every earlier request finished
  or finished at submit (ids-never-reused);
- token ids per bound: -1 and vocab_size rejected wherever they sit in the prompt (not only
  first), 0 and vocab_size - 1 accepted (token-id-bounds);
- a stop sequence whose first token repeats just before it in the output (x x y, stop [x, y]):
  the second x restarts the match (stop-sequence-after-a-repeat);
- collections: a stop id that is not the first of stop_token_ids, a stop sequence that is not
  the first of stop_sequences, a one-token stop sequence, and a stop sequence whose digits
  coincide with two generated tokens' (stop-any-element);
- the real target model, fp32, mixed lengths and stops (target-mixed-static, hidden-target).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from lab.exercises.batch_engine import probe
from lab.exercises.batch_engine.grading.common import (
    MARK0,
    Fail,
    hidden_probe,
    load_case,
    target_cases,
)
from lab.exercises.batch_engine.grading.common import make_case as _case
from lab.exercises.batch_engine.grading.common import probe_request as _req
from lab.grader.api import Case
from questions.wording import noun


def _stop_case_requests(k0: int) -> list[dict[str, Any]]:
    """Stop token (included) and a stop sequence spanning two tokens, placed mid-output."""
    out = []
    for k, (length, stop_at) in enumerate([(5, 2), (9, 5), (3, 0)], start=k0):
        base = _req(k, length, 12)
        tokens, _ = probe.solo(base["prompt"], 12)
        out.append({**base, "stop_ids": [tokens[stop_at]]})
    base = _req(k0 + 3, 6, 12)
    tokens, _ = probe.solo(base["prompt"], 12)
    out.append({**base, "stop_seqs": [[tokens[3], tokens[4]], [1, 1, 1]]})
    return out


def _stop_on_last_token_requests(k0: int) -> list[dict[str, Any]]:
    """A stop token, and a two-token stop sequence, that land exactly on the max_tokens-th token:
    stop and length on the same token, and stop wins."""
    out = []
    for k, (length, max_tokens, kind) in enumerate([(5, 4, "token"), (6, 4, "sequence")],
                                                   start=k0):
        base = _req(k, length, max_tokens)
        tokens, _ = probe.solo(base["prompt"], max_tokens)
        if kind == "token":
            out.append({**base, "stop_ids": [tokens[-1]]})
        else:
            out.append({**base, "stop_seqs": [tokens[-2:]]})
    return out


def _stop_output_only_requests() -> list[dict[str, Any]]:
    """Request 0's stop sequence is (its prompt's last token, its first output token): only
    generated tokens count, so it runs on to max_tokens; request 1's stop sequence is its second
    and third output tokens, which do stop it."""
    first, second = _req(0, 5, 8), _req(1, 4, 8)
    out0, out1 = probe.solo(first["prompt"], 8)[0], probe.solo(second["prompt"], 8)[0]
    assert [first["prompt"][-1], out0[0]] not in [out0[i:i + 2] for i in range(len(out0) - 1)]
    return [{**first, "stop_seqs": [[first["prompt"][-1], out0[0]]]},
            {**second, "stop_seqs": [out1[1:3]]}]


def _zero_requests() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Requests and probe settings where the probe emits id 0 as the third token of request 0
    (its stop token), and request 1's prompt holds a 0."""
    first = _req(0, 5, 12)
    zero_id = probe.solo(first["prompt"], 12)[0][2]
    reqs = [{**first, "stop_ids": [0]}, {**_req(1, 4, 6), "stop_ids": [0]}]
    reqs[1]["prompt"][2] = 0
    reqs.append(_req(2, 6, 5))
    return reqs, {"zero_id": zero_id}


def _unused_ids(tokens: list[int], n: int) -> list[int]:
    """`n` ids the probe never emits in `tokens` (stop ids that must not match)."""
    return [t for t in range(probe.FIRST_ID, probe.VOCAB) if t not in tokens][:n]


def _coinciding_pair(tokens: list[int]) -> list[int]:
    """Two ids whose decimal digits, joined, equal two consecutive generated tokens' but which
    are other tokens (34, 336 -> [343, 36]): a stop sequence compared as joined text matches."""
    pairs = list(itertools.pairwise(tokens))
    for a, b in pairs:
        text = f"{a}{b}"
        for cut in range(1, len(text)):
            x, y = text[:cut], text[cut:]
            if x[0] == "0" or y[0] == "0":
                continue
            pair = (int(x), int(y))
            if (pair != (a, b) and all(probe.FIRST_ID <= v < probe.VOCAB for v in pair)
                    and pair not in pairs):
                return list(pair)
    raise AssertionError("no coinciding pair in this output")


def _stop_any_element_requests() -> list[dict[str, Any]]:
    """Matches on a non-first element of each collection; one non-match by coincidence."""
    reqs = [_req(k, 5, 12) for k in range(4)]
    outs = [probe.solo(r["prompt"], 12)[0] for r in reqs]
    reqs[0]["stop_ids"] = [*_unused_ids(outs[0], 2), outs[0][3]]
    reqs[1]["stop_seqs"] = [[*_unused_ids(outs[1], 3)], [outs[1][4], outs[1][5]]]
    reqs[2]["stop_seqs"] = [_unused_ids(outs[2], 2), [outs[2][6]]]
    reqs[3]["stop_seqs"] = [_coinciding_pair(outs[3])]
    return reqs


def _stop_after_repeat_requests() -> list[dict[str, Any]]:
    """Request 0's output repeats a token (`x x y`, the probe's first such output among these
    prompts): its stop sequence is `[x, y]`, matched only if the second `x` restarts the match.
    Request 1 runs beside it with no stop."""
    first = _req(11, 11, 12)
    out = probe.solo(first["prompt"], 12)[0]
    i = next(i for i in range(1, len(out) - 1) if out[i] == out[i - 1] != out[i + 1])
    assert [out[i], out[i + 1]] not in [out[j:j + 2] for j in range(i)]
    return [{**first, "stop_seqs": [[out[i], out[i + 1]]]}, _req(12, 4, 6)]


def _identical_requests() -> list[dict[str, Any]]:
    """Request 1 is request 0 again (same prompt, same settings), submitted at the same time;
    request 3 is request 0 again, after everything finished."""
    first = _req(0, 4, 5)
    return [first, dict(first, prompt=list(first["prompt"])), _req(2, 3, 4),
            dict(first, prompt=list(first["prompt"]), t=0.3)]


def _level1_fixed() -> list[Case]:
    return [
        _case("padding-mask-positions", 1, "4 prompts of lengths 1, 3, 7, 12 in one batch: "
              "left padding, attention mask, per-row positions",
              [_req(k, n, 6) for k, n in enumerate([1, 3, 7, 12])]),
        _case("full-batch-goes-at-once", 1, "max_batch_size requests arrive together: one batch "
              "right away, no waiting", [_req(k, 4, 3) for k in range(4)],
              checks=("first_call_at:0:0,1,2,3",)),
        _case("b-plus-one-fifo", 1, "B+1 requests at once: the first B (FIFO) go, then the last",
              [_req(k, 3, 2) for k in range(5)], checks=("first_call_at:0:0,1,2,3",)),
        _case("lone-request-waits-max-wait", 1, "one request at t=0.010: it goes at "
              "t = 0.010 + max_wait, not earlier, not later", [_req(0, 4, 2, t=0.010)],
              checks=("lone",)),
        _case("max-wait-zero", 1, "max_wait 0: a lone request goes at the step it arrives, "
              "not a tick later (0 is a duration, not 'no wait configured')",
              [_req(0, 3, 2, t=0.010)], wait=0.0, checks=("lone", "exact")),
        _case("deadline-on-the-tick", 1, "a lone request at t=0.25 s with max_wait 125 ms (exact "
              "binary fractions): it goes on the very tick its wait runs out, t=0.375 s, not one "
              "1 ms tick later (`now - submit >= max_wait`)", [_req(0, 4, 2, t=0.25)],
              wait=0.125, checks=("lone", "exact")),
        _case("arrival-at-wait-expiry", 1, "a request arrives exactly when the oldest has "
              "waited max_wait (125 ms, from t=0.25 s): both are queued at that step and share "
              "the batch, which goes at t=0.375 s on the tick, not later",
              [_req(0, 4, 3, t=0.25), _req(1, 3, 3, t=0.375)], B=4, wait=0.125,
              checks=("first_call_at:0.375:0,1", "exact")),
        _case("window-shares-a-batch", 1, "arrivals at 0, 15 and 30 ms with max_wait 50 ms share "
              "one batch at 50 ms", [_req(k, 4, 2, t=0.015 * k) for k in range(3)], B=8,
              checks=("first_call_at:0.05:0,1,2",)),
        _case("cap-never-exceeded", 1, "11 requests at once with max_batch_size 4",
              [_req(k, 2 + k % 5, 3 + k % 4) for k in range(11)]),
        _case("static-runs-to-completion", 1, "a request arriving while a batch runs waits for "
              "the whole batch to finish (static batching)",
              [_req(0, 4, 12), _req(1, 6, 8), _req(2, 3, 4, t=0.07)], B=4, wait=0.02),
        _case("conventions-stop-and-length", 1, "max_tokens 0 -> empty result and one `length` "
              "finish; max_tokens 1; stop token included; stop sequence spanning two tokens; a "
              "stop token and a stop sequence on the max_tokens-th token finish with `stop`",
              [_req(0, 4, 0), _req(1, 3, 1), *_stop_case_requests(2),
               *_stop_on_last_token_requests(6)]),
        _case("stop-sequence-output-only", 1, "a stop sequence made of the prompt's last token "
              "and the first generated one does not stop the request: stop sequences match "
              "generated tokens only", _stop_output_only_requests()),
        _case("bad-requests-rejected", 1, "empty prompt, max_tokens < 0, a token id outside the "
              "vocabulary and prompt + max_tokens over the model's positions raise ValueError in "
              "submit; the good requests around them are unaffected",
              [_req(0, 3, 4), {"t": 0.0, "prompt": [], "max_tokens": 3},
               {**_req(2, 3, -1)}, {**_req(3, 3, 3), "prompt": [MARK0 + 3, probe.VOCAB, 5]},
               {**_req(4, 3, 5000)}, _req(5, 5, 4)], checks=("rejects:1,2,3,4",)),
        _case("max-positions-boundary", 1, "max_positions 40: prompt + max_tokens = 40 is "
              "accepted (a 30-token prompt, and a 1-token prompt with max_tokens 39), 41 is "
              "rejected; a token id of vocab_size - 1 is accepted",
              [_req(0, 30, 10), _req(1, 30, 11), _req(2, 1, 39),
               {**_req(3, 3, 4), "prompt": [MARK0 + 3, probe.VOCAB - 1, 5]}],
              checks=("rejects:1",), max_positions=40),
        _case("eos-id-zero", 1, "the stop token is id 0 (as the shipped target's EOS) and a "
              "prompt contains id 0: both are ordinary ids (`if token:` is false for 0)",
              _zero_requests()[0], **_zero_requests()[1]),
        _case("identical-requests", 1, "two identical requests (same prompt, same settings) at "
              "once, and the same request again once all finished: each submit is a new "
              "request with its own id, tokens and finish event", _identical_requests(),
              B=4, wait=0.01, same_markers=1),
        _case("ids-never-reused", 1, "request 0 finishes; request 1 (max_tokens 0) finishes at "
              "submit; requests 2 and 3 reach an empty engine later: every submit returns an id "
              "never returned before", [_req(0, 3, 2), _req(1, 3, 0, t=0.2), _req(2, 4, 3, t=0.3),
                                        _req(3, 4, 2, t=0.3)], B=2, wait=0.01),
        _case("token-id-bounds", 1, "token id -1 and vocab_size are rejected wherever they sit "
              "in the prompt (last, middle); 0 and vocab_size - 1 anywhere are accepted",
              [{**_req(0, 3, 3), "prompt": [MARK0, 5, -1]},
               {**_req(1, 4, 3), "prompt": [MARK0 + 1, 7, probe.VOCAB, 9]},
               {**_req(2, 4, 3), "prompt": [MARK0 + 2, 0, 3, probe.VOCAB - 1]},
               {**_req(3, 3, 3), "prompt": [MARK0 + 3, 6, probe.VOCAB + 7]},
               _req(4, 3, 3)], checks=("rejects:0,1,3",), zero_id=probe.VOCAB),
        _case("stop-sequence-after-a-repeat", 1, "the output repeats a token (x x y) and the "
              "stop sequence is [x, y]: it stops at y (a matcher that resets on the mismatch "
              "at the second x misses it)", _stop_after_repeat_requests()),
        _case("stop-any-element", 1, "the matching stop id is the third of stop_token_ids; the "
              "matching stop sequence the second of stop_sequences; a one-token stop sequence; "
              "a stop sequence whose digits joined equal two generated tokens' does not match",
              _stop_any_element_requests()),
        _case("max-batch-one", 1, "max_batch_size 1: each request runs alone, in arrival order",
              [_req(k, 2 + 3 * k, 3 + k) for k in range(3)], B=1, wait=0.01),
        _case("shutdown-mid-run", 1, "shutdown() while requests are queued and running: every "
              "request still gets exactly one finish event (`abort` if unfinished)",
              [_req(k, 3 + k, 30, t=0.01 * k) for k in range(7)], B=3, wait=0.02,
              shutdown_at=0.12, checks=("shutdown",)),
    ]


def check_static(calls: list[Any], rows_of: list[list[int]], finish_t: dict[int, float]) -> None:
    for n in range(1, len(calls)):
        joined = set(rows_of[n]) - set(rows_of[n - 1])
        if not joined:
            continue
        running = [r for r in rows_of[n - 1] if finish_t.get(r, math.inf) > calls[n][0]]
        if running:
            raise Fail(f"model call {n}: {noun(len(joined), 'request')} {sorted(joined)} "
                       f"joined while requests "
                       f"{running} of the running batch were unfinished — with continuous="
                       "False a batch runs to completion before the next one forms")


def cases(seed: int) -> list[Case]:
    return (_level1_fixed() + hidden_probe(1, seed) + [load_case(1, seed, 35.0)]
            + target_cases(1, seed))
