"""Helpers every level's grading shares (parent side): building cases, reading the raw record
`drive.run` returns, and the checks that hold at every level.

- `view(case, got)`: the record with the probe's raw calls summarized (`probe_checks`) and the
  policy's indexes (which request each row is, when each request finished);
- the stream (per request: tokens in order, no duplicates or cross-talk, exactly one finish event,
  also across shutdown, nothing after it) and the outputs (probe: `probe.solo`; target: each
  request decoded alone by the model's own no-cache forward, the expected value's `truth`; a
  divergence excused only at a near-tie: solo top-1 vs top-2 logit margin below NEAR_TIE),
  rejections;
- the policy every level obeys: the cap, one row per request, FIFO by admitting step, an idle
  engine dispatches by size or wait, and the KV cache is used (nothing fed twice);
- `latency_stats`: output tok/s and p50/p95 TTFT and end-to-end latency from the timestamps.
"""

from __future__ import annotations

import math
import random
from typing import Any

from lab.exercises.batch_engine import harness, probe
from lab.exercises.batch_engine.grading import probe_checks
from lab.grader.api import Case
from questions.wording import plural

NEAR_TIE = 1e-4
EPS_S = 0.003  # scheduling tolerance on the virtual clock (the harness ticks 1 ms when idle)
MARK0 = 100  # probe prompts start with MARK0 + request index, so calls name their requests


class Fail(Exception):
    pass


# -- cases ------------------------------------------------------------------------------------
def probe_request(k: int, length: int, max_tokens: int, t: float = 0.0,
                  rng: random.Random | None = None, **extra: Any) -> dict[str, Any]:
    """A probe request whose first prompt token is its marker."""
    r = rng or random.Random(k * 7919 + length)
    prompt = [MARK0 + k] + [r.randrange(2, probe.VOCAB) for _ in range(length - 1)]
    return {"t": t, "prompt": prompt, "max_tokens": max_tokens, **extra}


def make_case(cid: str, level: int, description: str, requests: list[dict[str, Any]], *,
              model: str = "probe", B: int = 4, wait: float = 0.05, checks: tuple[str, ...] = (),
              budget: int | None = None, shutdown_at: float | None = None, timeout_s: float = 30.0,
              required: bool = True, cancels: list[tuple[float, int]] | None = None,
              **probe: int) -> Case:
    """`probe`: ProbeModel settings for this case (max_positions, zero_id)."""
    params = {
        "model": model, "max_batch_size": B, "max_wait_s": wait, "continuous": level >= 2,
        "kv_budget_tokens": budget, "shutdown_at": shutdown_at, "checks": list(checks),
        "requests": requests, "cancels": [list(c) for c in cancels or []], **probe,
    }
    size = sum((len(r["prompt"]) if "prompt" in r else r["span"][1]) + max(0, r["max_tokens"])
               for r in requests)
    size += 10_000 if model == "target" else 0
    return Case(id=cid, level=level, params=params, size=size, timeout_s=timeout_s,
                description=description, required=required, report="load" in checks)


def _target_requests(seed: int, n: int, max_tokens: list[int], stops: bool,
                     spread_s: float = 0.0) -> list[dict[str, Any]]:
    """Tokenizer-free requests: `span` = [where in prompts.txt (0..1), length in tokens] and
    `stops` = "token" | "sequence"; `resolve_requests` turns them into ids for one model."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        length = rng.choice([1, 2, rng.randint(3, 12), rng.randint(13, 40)])
        req: dict[str, Any] = {"t": round(spread_s * k, 4),
                               "span": [round(rng.random(), 6), length],
                               "max_tokens": max_tokens[k % len(max_tokens)]}
        if stops and k % 3 == 1:
            req["stops"] = "token"
        if stops and k % 3 == 2:
            req["stops"] = "sequence"
        out.append(req)
    return out


def target_cases(level: int, seed: int) -> list[Case]:
    continuous = level >= 2
    B = 4 if level == 1 else 3
    budget = 120 if level == 3 else None
    fixed = make_case(
        f"target-mixed-{'static' if not continuous else 'continuous'}", level,
        "target model (shipped, or --target), fp32: mixed prompt lengths, max_tokens 0/1/5/32, "
        "more requests than "
        "slots, stop tokens and two-token stop sequences mid-batch; tokens must equal solo "
        "greedy generation", _target_requests(1, 7, [5, 32, 1, 0, 32, 5, 32], True,
                                              0.0 if level == 1 else 0.004),
        model="target", B=B, wait=0.01, budget=budget, timeout_s=120.0)
    hidden = make_case(
        f"hidden-target-{seed}", level, "target model (shipped, or --target), seeded requests",
        _target_requests(seed, 6, [32, 5, 1, 32, 0, 5], True, 0.003 * (level - 1)),
        model="target", B=B, wait=0.01, budget=budget, timeout_s=120.0)
    return [fixed, hidden]


def hidden_probe(level: int, seed: int, n: int = 3) -> list[Case]:
    rng = random.Random(seed * 31 + level)
    out = []
    for j in range(n):
        B = rng.choice([2, 3, 4, 8])
        wait = rng.choice([0.005, 0.02, 0.05])
        reqs = []
        t = 0.0
        for k in range(rng.randint(8, 20)):
            t += rng.expovariate(rng.choice([30.0, 100.0, 400.0]))
            reqs.append(probe_request(k, rng.randint(1, 16), rng.choice([0, 1, 2, 5, 9, 17]),
                             round(t, 4), rng))
        budget = None
        if level == 3:
            budget = max(len(r["prompt"]) + r["max_tokens"] for r in reqs) + rng.randint(0, 30)
        out.append(make_case(f"hidden-probe-{seed}-{j}", level,
                         f"seeded arrivals, max_batch_size {B}, max_wait {wait * 1e3:g} ms"
                         + (f", KV budget {budget}" if budget else ""), reqs, B=B, wait=wait,
                         budget=budget))
    return out


def load_case(level: int, seed: int, rate: float) -> Case:
    reqs = harness.poisson_trace(seed, 90, rate, (4, 24), (1, 48), (2, probe.VOCAB),
                                 first_marker=MARK0)
    return make_case(f"load-poisson-{rate:g}-per-s", level,
                 f"seeded Poisson trace, 90 requests at {rate:g}/s, output lengths 1-48, "
                 "max_batch_size 8, virtual-time cost model: tok/s and p50/p95 TTFT and "
                 "end-to-end latency vs the reference (level 2 gate: p95 e2e <= 1.5x)",
                 reqs, B=8, wait=0.02, checks=("load",), budget=300 if level == 3 else None)


# -- the record, read ---------------------------------------------------------------------------
def view(case: Case, got: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """`got` with int-keyed rejections, the probe's calls summarized (their malformed inputs in
    `violations`) and, for the policy checks, `reqs` (the requests, in the tokens the reference
    ran), `index` (marker -> request), `finish_t`, and `policy_calls` / `rows_of` (the calls
    minus the extra ones of a step where a forward raised, and the requests each one ran)."""
    out = dict(got)
    out["rejected"] = {int(k): v for k, v in got["rejected"].items()}
    zero_ok = case.params.get("zero_id", -1) >= 0
    reqs = sorted(expected.get("requests", case.params["requests"]), key=lambda r: r["t"])
    markers = None if case.params.get("same_markers") else {r["prompt"][0] for r in reqs
                                                             if r["prompt"]}
    out["calls"], out["violations"] = probe_checks.summarize(got["calls"], zero_ok, markers)
    out["reqs"] = reqs
    out["index"] = {r["prompt"][0]: i for i, r in enumerate(reqs) if r["prompt"]}
    out["finish_t"] = {idx: t for t, kind, idx, _ in got["events"] if kind == "finish"}
    out["policy_calls"] = calls = _without_isolation(out)
    out["rows_of"] = [[out["index"][row[0]] for row in c[2] if row[0] in out["index"]]
                      for c in calls]
    return out


def latency_stats(submitted: list[float], events: list[Any]) -> dict[str, float]:
    """Output tok/s and p50/p95 TTFT and end-to-end latency, from per-request timestamps."""
    first: dict[int, float] = {}
    end: dict[int, float] = {}
    tokens = 0
    for t, kind, idx, _ in events:
        if kind == "token":
            tokens += 1
            first.setdefault(idx, t)
        elif kind == "finish":
            end.setdefault(idx, t)
    done = [i for i in end if i in first]
    if not done:
        return {"tok_per_s": 0.0, "ttft_p50_s": math.inf, "ttft_p95_s": math.inf,
                "e2e_p50_s": math.inf, "e2e_p95_s": math.inf}
    ttft = sorted(first[i] - submitted[i] for i in done)
    e2e = sorted(end[i] - submitted[i] for i in done)
    span = max(end.values()) - min(x for x in submitted if not math.isnan(x))
    return {
        "tok_per_s": tokens / span if span > 0 else math.inf,
        "ttft_p50_s": pct(ttft, 0.5), "ttft_p95_s": pct(ttft, 0.95),
        "e2e_p50_s": pct(e2e, 0.5), "e2e_p95_s": pct(e2e, 0.95),
    }


def pct(ordered: list[float], q: float) -> float:
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


# -- stream and outputs ----------------------------------------------------------------------------
def check_rejections(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any]) -> None:
    want: set[int] = set()
    for c in p["checks"]:
        if c.startswith("rejects:"):
            want = {int(x) for x in c.split(":")[1].split(",")}
    rejected = set(got["rejected"])
    for i in sorted(want - rejected):
        raise Fail(f"request {i} ({_describe(reqs[i])}) should be rejected"
                   f"{_why_invalid(p, reqs[i])}: submit must raise ValueError")
    for i in sorted(rejected - want):
        raise Fail(f"request {i} ({_describe(reqs[i])}) is valid but submit raised "
                   f"ValueError: {got['rejected'][i]}")


def _why_invalid(p: dict[str, Any], r: dict[str, Any]) -> str:
    """Which bound of the request contract `r` breaks (first found), as ' (…)'."""
    prompt, max_tokens = r["prompt"], r["max_tokens"]
    vocab = probe.VOCAB
    bad = [(j, t) for j, t in enumerate(prompt) if not 0 <= t < vocab]
    total = len(prompt) + max_tokens
    budget = p.get("kv_budget_tokens")
    why = ("the prompt is empty" if not prompt else
           f"max_tokens {max_tokens} < 0" if max_tokens < 0 else
           f"token id {bad[0][1]} at index {bad[0][0]} of the prompt is outside [0, {vocab}) — "
           "check every token, not only the first" if bad and p["model"] == "probe" else
           f"prompt + max_tokens = {total} > max_positions "
           f"{p.get('max_positions', probe.MAX_POSITIONS)}"
           if total > p.get("max_positions", probe.MAX_POSITIONS) else
           f"it alone needs {total - 1} KV tokens, over the budget of {budget}"
           if budget is not None and max_tokens > 0 and total - 1 > budget else "")
    return f" ({why})" if why else ""


def _describe(r: dict[str, Any]) -> str:
    prompt = r["prompt"]
    shown = prompt if len(prompt) <= 6 else [*prompt[:3], "…", *prompt[-2:]]
    return f"prompt {shown} ({len(prompt)} tokens), max_tokens {r['max_tokens']}"


def check_stream(reqs: list[dict[str, Any]], got: dict[str, Any],
                  p: dict[str, Any]) -> dict[int, tuple[list[int], list[str]]]:
    """Per request: (tokens, finish reasons) from the event stream, with its invariants."""
    streams: dict[int, tuple[list[int], list[str]]] = {}
    for n, (_t, kind, idx, payload) in enumerate(got["events"]):
        if kind == "stray":
            if str(payload).startswith("submit returned id"):
                raise Fail(f"{payload}: two requests got the same id — every submit returns a "
                           "new id (identical requests are still two requests, and an id is "
                           "never reused, also after its request finished)")
            raise Fail(f"an event for a request id submit never returned: {payload}")
        tokens, reasons = streams.setdefault(idx, ([], []))
        if kind == "finish":
            reasons.append(payload)
            if len(reasons) == 2:
                where = " (sent again by shutdown())" if n >= got["after_shutdown"] else ""
                again = [c for c in got.get("cancels", []) if c[1] == idx and c[3] <= n < c[4]]
                if again:
                    where = (f" (sent by cancel({idx}) at t={again[0][0]:.3f} s, a cancel of a "
                             "request that had already finished: a second cancel returns False "
                             "and sends nothing)")
                raise Fail(f"request {idx} got a second finish event{where}: "
                           f"{reasons[0]!r} then {reasons[1]!r} — exactly one terminal event")
        elif reasons:
            raise Fail(f"request {idx} streamed token {payload} after its finish event "
                       f"({reasons[0]!r})")
        else:
            tokens.append(payload)
    for i in range(len(reqs)):
        if i in got["rejected"]:
            if i in streams:
                raise Fail(f"request {i} was rejected by submit but still got events")
            continue
        if not streams.get(i, ([], []))[1]:
            raise Fail(f"request {i} ({_describe(reqs[i])}) never got a finish event"
                       + (" — shutdown() must finish every queued and running request with "
                           "`abort`" if p["shutdown_at"] is not None else ""))
    return streams


def expected_outputs(case: Case, reqs: list[dict[str, Any]],
                      expected: dict[str, Any]) -> dict[int, tuple[list[int], str]]:
    if case.params["model"] == "probe":
        zero_id = case.params.get("zero_id", -1)
        return {i: probe.solo(r["prompt"], r["max_tokens"], tuple(r.get("stop_ids", ())),
                              tuple(tuple(s) for s in r.get("stop_seqs", ())), zero_id)
                for i, r in enumerate(reqs) if r["max_tokens"] >= 0}
    out: dict[int, tuple[list[int], str]] = {}
    for i, solo in enumerate(expected["truth"]):  # the model's own forward (truth.py)
        if solo is not None:
            out[i] = (list(solo[0]), solo[1])
    solved = set(out)
    for _t, kind, idx, payload in expected["events"]:  # an empty prompt: the reference's run
        if idx in solved:
            continue
        tokens, reason = out.get(idx, ([], ""))
        if kind == "token":
            tokens.append(payload)
        elif kind == "finish":
            reason = payload
        out[idx] = (tokens, reason)
    return out


def check_outputs(case: Case, reqs: list[dict[str, Any]], got: dict[str, Any],
                   streams: dict[int, tuple[list[int], list[str]]],
                   expected: dict[int, tuple[list[int], str]], notes: list[str],
                   metrics: dict[str, float],
                   truth: list[list[Any] | None] | None = None) -> None:
    shutdown = case.params["shutdown_at"] is not None
    cancelled = {idx for _t, idx, ok, *_ in got.get("cancels", []) if ok is True}
    for i in range(len(reqs)):
        if i in got["rejected"] or i not in expected:
            continue
        want, want_reason = expected[i]
        tokens, reasons = streams[i]
        reason = reasons[0]
        if probe.POISON in reqs[i]["prompt"] and case.params["model"] == "probe":
            if reason != "error" or tokens:
                raise Fail(f"request {i} breaks the model (poison): expected no tokens and one "
                           f"'error' finish, got {len(tokens)} tokens and {reason!r}")
            continue
        if (shutdown or i in cancelled) and reason == "abort":
            if tokens != want[:len(tokens)]:
                raise Fail(f"request {i} was aborted by shutdown, but the tokens it streamed "
                           f"{_diff(want, tokens)}")
            continue
        if tokens != want:
            if case.params["model"] == "target":
                excuse = near_tie(want, tokens, truth[i] if truth else None)
                if excuse:
                    notes.append(f"request {i}: {excuse}")
                    metrics["near_ties"] = metrics.get("near_ties", 0) + 1
                    continue
            raise Fail(f"request {i} ({_describe(reqs[i])}): tokens {_diff(want, tokens)}"
                       + _hint(i, reqs, want, tokens, streams, expected))
        if reason != want_reason:
            raise Fail(f"request {i} ({_describe(reqs[i])}): finish reason {reason!r}, "
                       f"expected {want_reason!r} (stop = a stop token or stop sequence was "
                       "emitted, checked before max_tokens; length = max_tokens reached)")


def _diff(want: list[int], got: list[int]) -> str:
    k = next((j for j, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
             min(len(want), len(got)))
    if len(got) < len(want) and got == want[:len(got)]:
        return (f"stop after {len(got)} of the expected {len(want)}: the final token "
                f"{want[len(got):][:3]} was never streamed")
    if len(got) > len(want) and got[:len(want)] == want:
        return (f"run past the end: expected {len(want)} tokens, got {len(got)} "
                f"(extra {got[len(want):][:5]})")
    return (f"differ from position {k}: expected {want[k:k + 6]}, got {got[k:k + 6]} "
            f"({len(want)} expected, {len(got)} streamed)")


def _hint(i: int, reqs: list[dict[str, Any]], want: list[int], got: list[int],
          streams: dict[int, tuple[list[int], list[str]]],
          expected: dict[int, tuple[list[int], str]]) -> str:
    n = min(len(want), len(got))
    req = reqs[i]
    if len(got) > n and want[:n] == got[:n] and want:
        ids, seqs = list(req.get("stop_ids", ())), [list(s) for s in req.get("stop_seqs", ())]
        if want[-1] in ids[1:] and want[-1] != ids[0]:
            return (f" — it should have stopped at {want[-1]}, element {ids.index(want[-1]) + 1} "
                    f"of stop_token_ids {ids}: every stop id counts, not only the first")
        hit = [s for s in seqs if s and want[-len(s):] == s]
        if hit and len(want) > len(hit[0]) and want[-len(hit[0]) - 1] == hit[0][0] != hit[0][-1]:
            return (f" — it should have stopped at the stop sequence {hit[0]}, which follows "
                    f"another {hit[0][0]} ({want[-len(hit[0]) - 1:]}): a matcher that resets to "
                    "the start on a mismatch skips the repeated token; compare the last "
                    "len(stop) tokens with the stop sequence after every token")
        if hit and seqs.index(hit[0]) > 0:
            return (f" — it should have stopped at the stop sequence {hit[0]}, element "
                    f"{seqs.index(hit[0]) + 1} of stop_sequences: every sequence counts, not "
                    "only the first")
    if len(got) < len(want) and want[:len(got)] == got:
        text = "".join(map(str, got))
        for stop in req.get("stop_seqs", ()):
            if (stop and text.endswith("".join(map(str, stop)))
                    and got[-len(stop):] != list(stop)):
                return (f" — the stop sequence {list(stop)} was matched as text ({text[-8:]!r} "
                        f"ends with {''.join(map(str, stop))!r}), but the last tokens are "
                        f"{got[-len(stop):]}: compare token ids, not their joined digits")
    if len(got) > n and want[:n] == got[:n] and want and want[-1] == 0:
        return (" — it should have stopped at token id 0, a stop id like any other (`if token:` "
                "is False for id 0)")
    if len(got) < len(want) and want[:len(got)] == got:
        whole = [*reqs[i]["prompt"], *got]
        for stop in reqs[i].get("stop_seqs", ()):
            if (stop and whole[-len(stop):] == list(stop)
                    and got[-len(stop):] != list(stop)):
                return (f" — the stop sequence {list(stop)} was matched across the prompt: stop "
                        "sequences match generated tokens only")
    if want[:n] == got[:n]:
        return ""  # a prefix: _diff already says which end is wrong
    for j, (other, _) in expected.items():
        if j != i and other and got[:len(other)] == other and got != want:
            return f" — these are request {j}'s tokens: cross-talk between rows"
    probe_len = min(3, len(want))
    for k in range(1, len(got)):
        if got[:k] == want[:k] and probe_len and got[k:k + probe_len] == want[:probe_len]:
            return (f" — the stream repeats its first {k} tokens: a preempted request was "
                    "restarted from its prompt alone; recompute from the prompt plus the tokens "
                    "it had already streamed, and do not stream them again")
    lengths = {len(r["prompt"]) for r in reqs}
    if len(lengths) > 1 and len(reqs[i]["prompt"]) < max(lengths):
        return (" — a row shorter than the longest prompt diverged: check left padding, the "
                "attention mask and per-row positions")
    return ""


def near_tie(want: list[int], got: list[int], solo: list[Any] | None) -> str:
    """Excuse a divergence where the solo run's top-1 / top-2 logits were within NEAR_TIE and
    the learner's token is the runner-up (`solo`: the request's truth entry, truth.py)."""
    k = next((j for j, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), None)
    if k is None or solo is None:
        return ""
    margin, second = float(solo[2][k]), int(solo[3][k])
    if margin < NEAR_TIE and second == got[k]:
        return (f"diverged at token {k} on a near-tie (solo top-1 vs top-2 logit margin "
                f"{margin:.2e} < {NEAR_TIE:g}); excused")
    return ""


# -- policy at every level -------------------------------------------------------------------
def _without_isolation(got: dict[str, Any]) -> list[Any]:
    """In a step where a forward raised, the engine may probe rows alone: keep only the step's
    last call (the batch rerun without the culprit) for the policy checks."""
    err = set(got.get("error_steps", []))
    last = {c[3]: n for n, c in enumerate(got["calls"]) if c[3] in err}
    return [c for n, c in enumerate(got["calls"]) if c[3] not in err or last[c[3]] == n]


def check_kv_reuse(p: dict[str, Any], got: dict[str, Any], calls: list[Any],
                    index: dict[int, int], finish_t: dict[int, float]) -> int:
    """The KV cache is used: a request's row attends, in each call, to every token the cache held
    for it after its previous call, and feeds only what is new. The one exception is a preempted
    request (level 3, a KV budget): it is recomputed from its prompt, in an empty row, and never
    the whole batch at once (the oldest running request keeps its KV). In a step where a forward
    raised (level 4), `calls` holds only the step's last call, the rerun without the culprit: it is
    judged like any other (the others keep their cache). Returns the number of recomputes."""
    budget = p["kv_budget_tokens"]
    err = set(got.get("error_steps", []))
    held: dict[int, int] = {}  # marker -> the KV tokens its row held after its last call
    recomputes = 0
    prev: list[int] = []
    for n, (t0, _width, rows, step) in enumerate(calls):
        restarted: list[int] = []
        for marker, new, after in rows:
            past, before = after - new, held.pop(marker, None)
            held[marker] = after
            if before is None or past >= before:
                continue
            who = index.get(marker, marker)
            if budget is None or past > 0:
                raise Fail(
                    f"model call {n}: request {who} re-fed {plural(before - past, 'token')} it had "
                    f"already fed — its row held {before} KV tokens after its previous call, "
                    f"but this call attends to {past} of them and feeds {new} again. Use the KV "
                    "cache: keep each row's cache (and mask) between steps; after the prefill a "
                    "running row feeds only its newest token"
                    + (" — after a poison request failed, rerun the others with their cache as it "
                       "was before the call that raised" if step in err else
                       " (only a preempted request is recomputed, from an empty row)"
                       if budget is not None else
                       " (recomputing is only for a preempted request, level 3)"))
            recomputes += 1
            restarted.append(marker)
        ongoing = [m for m in prev if finish_t.get(index.get(m, -1), math.inf) > t0
                   and m in [r[0] for r in rows]]
        if ongoing and set(ongoing) <= set(restarted):
            raise Fail(
                f"model call {n}: every running request ({[index.get(m, m) for m in ongoing]}) "
                "was recomputed from its prompt, as if the KV cache were thrown away each step "
                "— keep each row's cache between steps; preemption frees the newest request "
                "only, and the oldest running one always keeps its KV")
        prev = [r[0] for r in rows]
    return recomputes


def dropped(calls: list[Any], rows_of: list[list[int]], finish_t: dict[int, float]) -> bool:
    """Whether some request left the batch unfinished (preempted) at some call."""
    for n in range(1, len(calls)):
        if any(r not in rows_of[n] and finish_t.get(r, math.inf) > calls[n][0]
               for r in rows_of[n - 1]):
            return True
    return False


def dups(rows: list[int]) -> list[int]:
    return sorted({r for r in rows if rows.count(r) > 1})


def check_fifo(reqs: list[dict[str, Any]], got: dict[str, Any], rows_of: list[list[int]]) -> None:
    """FIFO is about the step that admits each request (its first model call), not the order of
    the rows inside one call: a request must not start at an earlier call than one that arrived
    before it (same arrival time: submitted first)."""
    first: dict[int, int] = {}
    for n, rows in enumerate(rows_of):
        for r in rows:
            first.setdefault(r, n)
    arrival = sorted(first, key=lambda r: (got["submitted"][r], r))
    for k, early in enumerate(arrival):
        late = min(arrival[k + 1:], key=lambda r: (first[r], r), default=None)
        if late is not None and first[late] < first[early]:
            raise Fail(f"requests started out of arrival order: {late} started before "
                       f"{early}, which arrived first (FIFO: {late} first ran in model call "
                       f"{first[late]}, {early} only in call {first[early]}; first model "
                       f"calls: {[rows for rows in rows_of[:4]]})")


def check_waiting(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any],
                   calls: list[Any], rows_of: list[list[int]], finish_t: dict[int, float]) -> None:
    """Idle engine: a request must not wait past max_wait (+eps), nor go before it unless full."""
    wait, B = p["max_wait_s"], p["max_batch_size"]
    for n, (c, rows) in enumerate(zip(calls, rows_of, strict=True)):
        prev = rows_of[n - 1] if n else []
        if any(finish_t.get(r, math.inf) > c[0] for r in prev):
            continue  # a batch is running: not an idle dispatch
        if c[3] in got.get("error_steps", []):
            continue  # the rerun after a poison request was found: dispatched earlier this step
        idle_since = max((finish_t.get(r, 0.0) for r in prev), default=0.0)
        t0 = c[0]
        queued = [r for r in range(len(reqs)) if got["submitted"][r] <= t0 + 1e-9
                  and r not in got["rejected"] and reqs[r]["max_tokens"] > 0
                  and finish_t.get(r, math.inf) > t0]  # idle: every unfinished one is queued
        if not queued:
            continue
        oldest = min(got["submitted"][r] for r in queued)
        if len(queued) < B and t0 < oldest + wait - 1e-9:
            raise Fail(f"a batch of {len(rows)} went at t={t0:.3f} s with only {len(queued)} "
                       f"queued (max_batch_size {B}) before the oldest (submitted "
                       f"t={oldest:.3f} s) had waited max_wait ({wait * 1e3:g} ms) — a partial "
                       "batch waits for more requests until then")
        due = max(oldest + wait, idle_since)
        if t0 > due + EPS_S:
            raise Fail(f"requests queued since t={oldest:.3f} s were dispatched only at "
                       f"t={t0:.3f} s, {(t0 - due) * 1e3:.0f} ms after max_wait "
                       f"({wait * 1e3:g} ms) ran out with the engine idle")
