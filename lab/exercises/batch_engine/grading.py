"""Grading spec for `batch-engine` (see statement.md for the contract the checks enforce).

Three kinds of case, all replayed by `harness.replay` on an injected clock:
- probe cases: the grader's stub model (probe.py) logs every forward with its virtual time and
  flags malformed inputs; the checks read that log for the batching policy (cap, size-or-wait,
  FIFO by admitting step, re-formed every step, the KV cache reused, KV budget: held, used for
  admission, preemption) and compare outputs with `probe.solo`;
- target cases: a real model in fp32, the shipped pycode target or the learner's `--target`
  checkpoint; their requests name spans of prompts.txt in tokens and stops by role, resolved by
  `run` with that model's tokenizer (`resolve_requests`), and the reference's resolution comes
  back with its events; every request's tokens must equal the reference's (which equal solo
  greedy generation); a divergence is excused only at a near-tie (top-1 vs top-2 logit margin
  below NEAR_TIE of the solo run), and then logged in the verdict;
- load cases: a seeded Poisson trace on the probe's virtual clock, learner vs reference; reports
  tok/s and p50/p95 TTFT and end-to-end latency, and `p95_ratio` (the level 2 gate).
Every case also checks the stream: per request, tokens in order with no duplicates or
cross-talk, exactly one finish event (also across shutdown), nothing after it. Level 4 adds
cancels at given times (the return value and the slot freed at once) and poison requests (the
probe raises when token POISON is fed; only that request may fail, with "error"; the extra calls
the engine makes in that step to find the culprit are left out of the policy checks).
"""

from __future__ import annotations

import math
import random
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from lab.exercises.batch_engine import harness, probe
from lab.grader.api import Case, RunContext, Verdict

REFERENCE = "lab.reference.batch_engine"

NEAR_TIE = 1e-4
EPS_S = 0.003  # scheduling tolerance on the virtual clock (the harness ticks 1 ms when idle)
MARK0 = 100  # probe prompts start with MARK0 + request index, so calls name their requests
PROMPTS = Path(__file__).resolve().parent / "prompts.txt"


# -- cases ------------------------------------------------------------------------------------
def _req(k: int, length: int, max_tokens: int, t: float = 0.0, rng: random.Random | None = None,
         **extra: Any) -> dict[str, Any]:
    """A probe request whose first prompt token is its marker."""
    r = rng or random.Random(k * 7919 + length)
    prompt = [MARK0 + k] + [r.randrange(2, probe.VOCAB) for _ in range(length - 1)]
    return {"t": t, "prompt": prompt, "max_tokens": max_tokens, **extra}


def _case(cid: str, level: int, description: str, requests: list[dict[str, Any]], *,
          model: str = "probe", B: int = 4, wait: float = 0.05, checks: tuple[str, ...] = (),
          budget: int | None = None, shutdown_at: float | None = None, timeout_s: float = 30.0,
          required: bool = True, cancels: list[tuple[float, int]] | None = None) -> Case:
    params = {
        "model": model, "max_batch_size": B, "max_wait_s": wait, "continuous": level >= 2,
        "kv_budget_tokens": budget, "shutdown_at": shutdown_at, "checks": list(checks),
        "requests": requests, "cancels": [list(c) for c in cancels or []],
    }
    size = sum((len(r["prompt"]) if "prompt" in r else r["span"][1]) + max(0, r["max_tokens"])
               for r in requests)
    size += 10_000 if model == "target" else 0
    return Case(id=cid, level=level, params=params, size=size, timeout_s=timeout_s,
                description=description, required=required, report="load" in checks)


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
        _case("bad-requests-rejected", 1, "empty prompt, max_tokens < 0, a token id outside the "
              "vocabulary and prompt + max_tokens over the model's positions raise ValueError in "
              "submit; the good requests around them are unaffected",
              [_req(0, 3, 4), {"t": 0.0, "prompt": [], "max_tokens": 3},
               {**_req(2, 3, -1)}, {**_req(3, 3, 3), "prompt": [MARK0 + 3, probe.VOCAB, 5]},
               {**_req(4, 3, 5000)}, _req(5, 5, 4)], checks=("rejects:1,2,3,4",)),
        _case("shutdown-mid-run", 1, "shutdown() while requests are queued and running: every "
              "request still gets exactly one finish event (`abort` if unfinished)",
              [_req(k, 3 + k, 30, t=0.01 * k) for k in range(7)], B=3, wait=0.02,
              shutdown_at=0.12, checks=("shutdown",)),
    ]


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


@cache
def prompt_tokens(target: str | None = None) -> tuple[list[int], list[int], list[list[int]]]:
    """prompts.txt in the ids of `target`'s tokenizer (default: the shipped pycode target), a stop
    token and a two-token stop sequence a code model often emits: the tokens of " self."."""
    from lab.models import load_tokenizer

    tok = load_tokenizer(target or "pycode-target")
    ids = [int(i) for i in tok(PROMPTS.read_text(encoding="utf-8"),
                               add_special_tokens=False)["input_ids"]]
    tail = [int(i) for i in tok(" self.", add_special_tokens=False)["input_ids"]]
    return ids, tail[-1:], [tail[-2:]]


def resolve_requests(requests: list[dict[str, Any]], target: str | None = None
                     ) -> list[dict[str, Any]]:
    """Target-case requests in `target`'s token ids (requests that already have ids pass)."""
    ids, stop_ids, stop_seqs = prompt_tokens(target)
    out = []
    for r in requests:
        if "span" not in r:
            out.append(r)
            continue
        where, length = r["span"]
        start = int(where * (len(ids) - length))
        req: dict[str, Any] = {"t": r["t"], "prompt": ids[start:start + length],
                               "max_tokens": r["max_tokens"]}
        if r.get("stops") == "token":
            req["stop_ids"] = stop_ids
        elif r.get("stops") == "sequence":
            req["stop_seqs"] = stop_seqs
        out.append(req)
    return out


def _target_cases(level: int, seed: int) -> list[Case]:
    continuous = level >= 2
    B = 4 if level == 1 else 3
    budget = 120 if level == 3 else None
    fixed = _case(
        f"target-mixed-{'static' if not continuous else 'continuous'}", level,
        "target model (shipped, or --target), fp32: mixed prompt lengths, max_tokens 0/1/5/32, "
        "more requests than "
        "slots, stop tokens and two-token stop sequences mid-batch; tokens must equal solo "
        "greedy generation", _target_requests(1, 7, [5, 32, 1, 0, 32, 5, 32], True,
                                              0.0 if level == 1 else 0.004),
        model="target", B=B, wait=0.01, budget=budget, timeout_s=120.0)
    hidden = _case(
        f"hidden-target-{seed}", level, "target model (shipped, or --target), seeded requests",
        _target_requests(seed, 6, [32, 5, 1, 32, 0, 5], True, 0.003 * (level - 1)),
        model="target", B=B, wait=0.01, budget=budget, timeout_s=120.0)
    return [fixed, hidden]


def _hidden_probe(level: int, seed: int, n: int = 3) -> list[Case]:
    rng = random.Random(seed * 31 + level)
    out = []
    for j in range(n):
        B = rng.choice([2, 3, 4, 8])
        wait = rng.choice([0.005, 0.02, 0.05])
        reqs = []
        t = 0.0
        for k in range(rng.randint(8, 20)):
            t += rng.expovariate(rng.choice([30.0, 100.0, 400.0]))
            reqs.append(_req(k, rng.randint(1, 16), rng.choice([0, 1, 2, 5, 9, 17]),
                             round(t, 4), rng))
        budget = None
        if level == 3:
            budget = max(len(r["prompt"]) + r["max_tokens"] for r in reqs) + rng.randint(0, 30)
        out.append(_case(f"hidden-probe-{seed}-{j}", level,
                         f"seeded arrivals, max_batch_size {B}, max_wait {wait * 1e3:g} ms"
                         + (f", KV budget {budget}" if budget else ""), reqs, B=B, wait=wait,
                         budget=budget))
    return out


def _load_case(level: int, seed: int, rate: float) -> Case:
    reqs = harness.poisson_trace(seed, 90, rate, (4, 24), (1, 48), (2, probe.VOCAB),
                                 first_marker=MARK0)
    return _case(f"load-poisson-{rate:g}-per-s", level,
                 f"seeded Poisson trace, 90 requests at {rate:g}/s, output lengths 1-48, "
                 "max_batch_size 8, virtual-time cost model: tok/s and p50/p95 TTFT and "
                 "end-to-end latency vs the reference (level 2 gate: p95 e2e <= 1.5x)",
                 reqs, B=8, wait=0.02, checks=("load",), budget=300 if level == 3 else None)


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
        _case("shutdown-continuous", 2, "shutdown() mid-run: one finish event per request",
              [_req(k, 3 + k, 25, t=0.01 * k) for k in range(7)], B=3, wait=0.02,
              shutdown_at=0.1, checks=("shutdown",)),
    ]


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
        _case("budget-too-small-rejected", 3, "a request that could never fit the budget alone is "
              "rejected by submit", [_req(0, 30, 20), _req(1, 4, 4)], B=2, budget=40,
              checks=("rejects:0",)),
    ]


def _poisoned(k: int, length: int, max_tokens: int, t: float = 0.0) -> dict[str, Any]:
    req = _req(k, length, max_tokens, t)
    req["prompt"][length // 2 if length > 1 else 0] = probe.POISON
    return req


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
        _case("cancel-finished-or-unknown", 4, "cancel a finished request or an unknown id: "
              "returns False, no event", [_req(0, 3, 2)], B=1, wait=0.0,
              cancels=[(0.2, 0), (0.2, -1)]),
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


def cases(level: int, seed: int) -> list[Case]:
    if level == 4:
        return _level4_fixed() + _hidden_level4(seed)
    if level == 1:
        out = _level1_fixed() + _hidden_probe(1, seed) + [_load_case(1, seed, 35.0)]
    elif level == 2:
        out = _level2_fixed() + _hidden_probe(2, seed) + [_load_case(2, seed, 35.0)]
    elif level == 3:
        out = _level3_fixed() + _hidden_probe(3, seed) + [_load_case(3, seed, 35.0)]
    else:
        return []
    return out + _target_cases(level, seed)


# -- run ----------------------------------------------------------------------------------------
def run(solution: ModuleType, case: Case, ctx: RunContext) -> object:
    p = case.params
    requests = p["requests"]
    clock = harness.FakeClock()
    model: Any
    target = (ctx.model_paths or {}).get("target")
    if p["model"] == "probe":
        model = probe.ProbeModel(clock=clock, clock_advance=clock.advance)
    else:
        from lab.exercises.batch_engine.runtime import load_target

        model = load_target(ctx.device, "float32", target)
        requests = resolve_requests(requests, target)
    arrivals = harness.arrivals_from(requests)
    rec = harness.replay(
        solution.Engine, model, arrivals, max_batch_size=p["max_batch_size"],
        max_wait_s=p["max_wait_s"], continuous=p["continuous"],
        kv_budget_tokens=p["kv_budget_tokens"], clock=clock, advance=clock.advance,
        shutdown_at=p["shutdown_at"], cancels=[(c[0], c[1]) for c in p.get("cancels", [])],
    )
    out = dict(vars(rec))
    if p["model"] == "target":  # the grader reads the requests as the reference resolved them
        out["requests"], out["target"] = requests, target
    if "load" in p["checks"]:
        out["stats"] = harness.latency_stats(rec)
    return out


# -- check --------------------------------------------------------------------------------------
class _Fail(Exception):
    pass


def check(case: Case, got: object, expected: object) -> Verdict:
    assert isinstance(got, dict) and isinstance(expected, dict)
    p = case.params
    reqs = sorted(expected.get("requests", p["requests"]), key=lambda r: r["t"])
    notes: list[str] = []
    metrics: dict[str, float] = {}
    try:
        if got["stuck"]:
            raise _Fail(got["stuck"])
        if got.get("crash"):
            raise _Fail(f"step() raised {got['crash']} — one poison request must fail alone: "
                        "catch the error, find the request(s) at fault (e.g. retry each row "
                        "alone), finish them with 'error' and keep serving the rest")
        if got["violations"]:
            raise _Fail("the model saw malformed inputs: " + got["violations"][0]
                        + (f" (+{len(got['violations']) - 1} more)"
                           if len(got["violations"]) > 1 else ""))
        if got["multi_call_steps"]:
            raise _Fail(f"{got['multi_call_steps']} step() calls made more than one model call: "
                        "each step makes one forward over the whole running batch (newcomers "
                        "prefill inside it)")
        _check_rejections(p, reqs, got)
        streams = _check_stream(reqs, got, p)
        outputs = _expected_outputs(case, reqs, expected)
        _check_cancels(reqs, got, streams)
        _check_outputs(case, reqs, got, streams, outputs, notes, metrics, expected.get("target"))
        if p["model"] == "probe":
            _check_policy(p, reqs, got)
        if "load" in p["checks"]:
            stats, ref = got["stats"], expected["stats"]
            metrics.update({f"learner_{k}": v for k, v in stats.items()})
            metrics.update({f"reference_{k}": v for k, v in ref.items()})
            metrics["p95_ratio"] = stats["e2e_p95_s"] / max(ref["e2e_p95_s"], 1e-9)
            metrics["ttft_p95_ratio"] = stats["ttft_p95_s"] / max(ref["ttft_p95_s"], 1e-9)
            notes.append(
                f"p95 end-to-end {stats['e2e_p95_s'] * 1e3:.0f} ms vs reference "
                f"{ref['e2e_p95_s'] * 1e3:.0f} ms (x{metrics['p95_ratio']:.2f}); p95 TTFT "
                f"{stats['ttft_p95_s'] * 1e3:.0f} vs {ref['ttft_p95_s'] * 1e3:.0f} ms; "
                f"{stats['tok_per_s']:.0f} vs {ref['tok_per_s']:.0f} tok/s (virtual time)")
    except _Fail as exc:
        return Verdict(False, str(exc), metrics)
    return Verdict(True, "; ".join(notes), metrics)


def _check_rejections(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any]) -> None:
    want: set[int] = set()
    for c in p["checks"]:
        if c.startswith("rejects:"):
            want = {int(x) for x in c.split(":")[1].split(",")}
    rejected = set(got["rejected"])
    for i in sorted(want - rejected):
        raise _Fail(f"request {i} ({_describe(reqs[i])}) should be rejected: submit must raise "
                    "ValueError")
    for i in sorted(rejected - want):
        raise _Fail(f"request {i} ({_describe(reqs[i])}) is valid but submit raised "
                    f"ValueError: {got['rejected'][i]}")


def _describe(r: dict[str, Any]) -> str:
    prompt = r["prompt"]
    shown = prompt if len(prompt) <= 6 else [*prompt[:3], "…", *prompt[-2:]]
    return f"prompt {shown} ({len(prompt)} tokens), max_tokens {r['max_tokens']}"


def _check_stream(reqs: list[dict[str, Any]], got: dict[str, Any],
                  p: dict[str, Any]) -> dict[int, tuple[list[int], list[str]]]:
    """Per request: (tokens, finish reasons) from the event stream, with its invariants."""
    streams: dict[int, tuple[list[int], list[str]]] = {}
    for n, (_t, kind, idx, payload) in enumerate(got["events"]):
        if kind == "stray":
            raise _Fail(f"an event for a request id submit never returned: {payload}")
        tokens, reasons = streams.setdefault(idx, ([], []))
        if kind == "finish":
            reasons.append(payload)
            if len(reasons) == 2:
                where = " (sent again by shutdown())" if n >= got["after_shutdown"] else ""
                raise _Fail(f"request {idx} got a second finish event{where}: "
                            f"{reasons[0]!r} then {reasons[1]!r} — exactly one terminal event")
        elif reasons:
            raise _Fail(f"request {idx} streamed token {payload} after its finish event "
                        f"({reasons[0]!r})")
        else:
            tokens.append(payload)
    for i in range(len(reqs)):
        if i in got["rejected"]:
            if i in streams:
                raise _Fail(f"request {i} was rejected by submit but still got events")
            continue
        if not streams.get(i, ([], []))[1]:
            raise _Fail(f"request {i} ({_describe(reqs[i])}) never got a finish event"
                        + (" — shutdown() must finish every queued and running request with "
                           "`abort`" if p["shutdown_at"] is not None else ""))
    return streams


def _expected_outputs(case: Case, reqs: list[dict[str, Any]],
                      expected: dict[str, Any]) -> dict[int, tuple[list[int], str]]:
    if case.params["model"] == "probe":
        return {i: probe.solo(r["prompt"], r["max_tokens"], tuple(r.get("stop_ids", ())),
                              tuple(tuple(s) for s in r.get("stop_seqs", ())))
                for i, r in enumerate(reqs) if r["max_tokens"] >= 0}
    out: dict[int, tuple[list[int], str]] = {}
    for _t, kind, idx, payload in expected["events"]:
        tokens, reason = out.get(idx, ([], ""))
        if kind == "token":
            tokens.append(payload)
        elif kind == "finish":
            reason = payload
        out[idx] = (tokens, reason)
    return out


def _check_outputs(case: Case, reqs: list[dict[str, Any]], got: dict[str, Any],
                   streams: dict[int, tuple[list[int], list[str]]],
                   expected: dict[int, tuple[list[int], str]], notes: list[str],
                   metrics: dict[str, float], target: str | None = None) -> None:
    shutdown = case.params["shutdown_at"] is not None
    cancelled = {idx for _t, idx, ok in got.get("cancels", []) if ok is True}
    for i in range(len(reqs)):
        if i in got["rejected"] or i not in expected:
            continue
        want, want_reason = expected[i]
        tokens, reasons = streams[i]
        reason = reasons[0]
        if probe.POISON in reqs[i]["prompt"] and case.params["model"] == "probe":
            if reason != "error" or tokens:
                raise _Fail(f"request {i} breaks the model (poison): expected no tokens and one "
                            f"'error' finish, got {len(tokens)} tokens and {reason!r}")
            continue
        if (shutdown or i in cancelled) and reason == "abort":
            if tokens != want[:len(tokens)]:
                raise _Fail(f"request {i} was aborted by shutdown, but the tokens it streamed "
                            f"{_diff(want, tokens)}")
            continue
        if tokens != want:
            if case.params["model"] == "target":
                excuse = _near_tie(reqs[i], want, tokens, target)
                if excuse:
                    notes.append(f"request {i}: {excuse}")
                    metrics["near_ties"] = metrics.get("near_ties", 0) + 1
                    continue
            raise _Fail(f"request {i} ({_describe(reqs[i])}): tokens {_diff(want, tokens)}"
                        + _hint(i, reqs, want, tokens, streams, expected))
        if reason != want_reason:
            raise _Fail(f"request {i} ({_describe(reqs[i])}): finish reason {reason!r}, "
                        f"expected {want_reason!r} (stop = a stop token or stop sequence was "
                        "emitted, checked before max_tokens; length = max_tokens reached)")


def _check_cancels(reqs: list[dict[str, Any]], got: dict[str, Any],
                   streams: dict[int, tuple[list[int], list[str]]]) -> None:
    """cancel() is True exactly for a live request, which then gets one abort at that moment."""
    finish_t: dict[int, float] = {}
    for t, kind, idx, _ in got["events"]:
        if kind == "finish":
            finish_t.setdefault(idx, t)  # the first finish (a second one fails the stream check)
    for t, idx, ok in got.get("cancels", []):
        if idx < 0:
            if ok is not False:
                raise _Fail(f"cancel() of an id no request has returned {ok!r}, expected False")
            continue
        first = finish_t.get(idx, math.inf)
        if ok is not True and first > t + 1e-12:
            raise _Fail(f"cancel({idx}) at t={t:.3f} s returned {ok!r}, but the request was still "
                        "queued or running: expected True and one Finish 'abort'")
        if ok is True and first < t - 1e-12:
            raise _Fail(f"cancel({idx}) at t={t:.3f} s returned True for a request that had "
                        "already finished: return False and send nothing")
        if ok is True:
            reasons = streams.get(idx, ([], []))[1]
            if reasons[:1] != ["abort"] or abs(finish_t.get(idx, math.inf) - t) > 1e-9:
                raise _Fail(f"cancel({idx}) at t={t:.3f} s returned True but its finish event is "
                            f"{reasons[:1]} at t={finish_t.get(idx, math.inf):.3f} s: send "
                            "Finish(id, 'abort') from cancel() itself")
            later = [n for n, c in enumerate(got["calls"]) if c[0] > t
                     and any(row[0] == reqs[idx]["prompt"][0] for row in c[2])]
            if later:
                raise _Fail(f"request {idx} was cancelled at t={t:.3f} s but still ran in model "
                            f"call {later[0]}: free its slot (drop its row) at once")


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


def _near_tie(req: dict[str, Any], want: list[int], got: list[int], target: str | None = None
              ) -> str:
    """Excuse a divergence where the solo run's top-1 / top-2 logits were within NEAR_TIE."""
    import torch

    k = next((j for j, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), None)
    if k is None:
        return ""
    from lab.exercises.batch_engine.runtime import load_target

    model = load_target("cpu", "float32", target).model
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([req["prompt"] + want[:k]])).logits[0, -1]
    top = logits.float().topk(2)
    margin = float(top.values[0] - top.values[1])
    if margin < NEAR_TIE and int(top.indices[1]) == got[k]:
        return (f"diverged at token {k} on a near-tie (solo top-1 vs top-2 logit margin "
                f"{margin:.2e} < {NEAR_TIE:g}); excused")
    return ""


# -- policy -------------------------------------------------------------------------------------
def _check_policy(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any]) -> None:
    B, wait = p["max_batch_size"], p["max_wait_s"]
    calls = _without_isolation(got)
    index = {r["prompt"][0]: i for i, r in enumerate(reqs) if r["prompt"]}
    finish_t = {idx: t for t, kind, idx, _ in got["events"] if kind == "finish"}
    submitted = got["submitted"]
    rows_of = [[index[row[0]] for row in c[2] if row[0] in index] for c in calls]
    for n, (c, rows) in enumerate(zip(calls, rows_of, strict=True)):
        if len(c[2]) > B:
            raise _Fail(f"model call {n} at t={c[0]:.3f} s ran {len(c[2])} rows, over "
                        f"max_batch_size {B} (requests {rows})")
        if len(set(rows)) != len(rows):
            raise _Fail(f"model call {n} has request(s) {_dups(rows)} in two rows at once")
    recomputed = _check_kv_reuse(p, got, calls, index, finish_t)
    if p["kv_budget_tokens"] is not None:
        for n, c in enumerate(calls):
            held = sum(r[2] for r in c[2])
            if held > p["kv_budget_tokens"]:
                raise _Fail(f"model call {n} leaves {held} KV tokens in the cache, over the "
                            f"budget of {p['kv_budget_tokens']} — admit only what fits and "
                            "preempt the newest when the running batch cannot grow")
        if p["continuous"]:
            _check_budget_admission(p, reqs, got, calls, rows_of, finish_t)
        if "preempts" in p["checks"] and not recomputed and not _dropped(calls, rows_of,
                                                                          finish_t):
            raise _Fail(f"no request was ever preempted, but these {len(reqs)} requests cannot "
                        f"all grow to their length within the {p['kv_budget_tokens']}-token KV "
                        "budget — admit whatever fits, and when the running batch cannot grow by "
                        "one token each, preempt the newest running request (drop its row, put "
                        "it back at the front of the queue, recompute it later)")
    for c in p["checks"]:
        name, _, arg = c.partition(":")
        if name == "first_call_at":
            at, _, who = arg.partition(":")
            want = [int(x) for x in who.split(",")]
            if not calls:
                raise _Fail("the model was never called")
            t0, first = calls[0][0], rows_of[0]
            if sorted(first) != sorted(want):  # the order of the rows inside a call is free
                raise _Fail(f"the first batch should be requests {want} in arrival order, got "
                            f"{first} (FIFO: the oldest go first; the order of the rows inside "
                            "a call does not matter)")
            if abs(t0 - float(at)) > EPS_S:
                raise _Fail(f"the first batch went at t={t0:.3f} s, expected t={float(at):.3f} "
                            f"s (max_batch_size {B}, max_wait {wait * 1e3:g} ms, "
                            "size or wait, whichever comes first)")
        elif name == "lone":
            t0, due = calls[0][0], submitted[0] + wait
            if t0 < due - 1e-9:
                raise _Fail(f"a lone request submitted at t={submitted[0]:.3f} s was dispatched "
                            f"at t={t0:.3f} s, before max_wait ({wait * 1e3:g} ms) had passed — "
                            "a partial batch waits for more requests until the oldest has "
                            "waited max_wait")
            if t0 > due + EPS_S:
                raise _Fail(f"a lone request submitted at t={submitted[0]:.3f} s was dispatched "
                            f"at t={t0:.3f} s, {(t0 - due) * 1e3:.0f} ms after its max_wait "
                            f"({wait * 1e3:g} ms) ran out")
    _check_fifo(reqs, got, rows_of)
    _check_waiting(p, reqs, got, calls, rows_of, finish_t)
    if p["continuous"] and "reformed" in p["checks"]:
        _check_reformed(p, reqs, got, calls, rows_of, finish_t)
    if not p["continuous"]:
        _check_static(calls, rows_of, finish_t)


def _without_isolation(got: dict[str, Any]) -> list[Any]:
    """In a step where a forward raised, the engine may probe rows alone: keep only the step's
    last call (the batch rerun without the culprit) for the policy checks."""
    err = set(got.get("error_steps", []))
    last = {c[3]: n for n, c in enumerate(got["calls"]) if c[3] in err}
    return [c for n, c in enumerate(got["calls"]) if c[3] not in err or last[c[3]] == n]


def _check_kv_reuse(p: dict[str, Any], got: dict[str, Any], calls: list[Any],
                    index: dict[int, int], finish_t: dict[int, float]) -> int:
    """The KV cache is used: a request's row attends, in each call, to every token the cache held
    for it after its previous call, and feeds only what is new. The one exception is a preempted
    request (level 3, a KV budget): it is recomputed from its prompt, in an empty row, and never
    the whole batch at once (the oldest running request keeps its KV). Calls in a step where a
    forward raised (level 4) are not judged. Returns the number of such recomputes."""
    budget = p["kv_budget_tokens"]
    err = set(got.get("error_steps", []))
    held: dict[int, int] = {}  # marker -> the KV tokens its row held after its last call
    recomputes = 0
    prev: list[int] = []
    for n, (t0, _width, rows, step) in enumerate(calls):
        restarted: list[int] = []
        for marker, new, after in rows:
            past, before = after - new, held.pop(marker, None)
            if step in err:
                continue  # a retry after a forward raised: the next call sets the baseline
            held[marker] = after
            if before is None or past >= before:
                continue
            who = index.get(marker, marker)
            if budget is None or past > 0:
                raise _Fail(
                    f"model call {n}: request {who} re-fed {before - past} token(s) it had "
                    f"already fed — its row held {before} KV tokens after its previous call, "
                    f"but this call attends to {past} of them and feeds {new} again. Use the KV "
                    "cache: keep each row's cache (and mask) between steps; after the prefill a "
                    "running row feeds only its newest token"
                    + (" (only a preempted request is recomputed, from an empty row)"
                       if budget is not None else
                       " (recomputing is only for a preempted request, level 3)"))
            recomputes += 1
            restarted.append(marker)
        ongoing = [m for m in prev if finish_t.get(index.get(m, -1), math.inf) > t0
                   and m in [r[0] for r in rows]]
        if ongoing and set(ongoing) <= set(restarted) and step not in err:
            raise _Fail(
                f"model call {n}: every running request ({[index.get(m, m) for m in ongoing]}) "
                "was recomputed from its prompt, as if the KV cache were thrown away each step "
                "— keep each row's cache between steps; preemption frees the newest request "
                "only, and the oldest running one always keeps its KV")
        prev = [r[0] for r in rows]
    return recomputes


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
            raise _Fail(f"model call {n} at t={t0:.3f} s ran {len(c[2])} of {B} rows, leaving "
                        f"{held} of the {budget} KV tokens in use, while request {head} at the "
                        f"head of the queue needed {need} ({what}): it fits, so it joins at this "
                        "step — admit from the front of the queue whatever fits the budget (the "
                        "budget caps the KV held; it is no reason to run fewer requests, or to "
                        "reserve room for tokens not generated yet)")


def _dropped(calls: list[Any], rows_of: list[list[int]], finish_t: dict[int, float]) -> bool:
    """Whether some request left the batch unfinished (preempted) at some call."""
    for n in range(1, len(calls)):
        if any(r not in rows_of[n] and finish_t.get(r, math.inf) > calls[n][0]
               for r in rows_of[n - 1]):
            return True
    return False


def _dups(rows: list[int]) -> list[int]:
    return sorted({r for r in rows if rows.count(r) > 1})


def _check_fifo(reqs: list[dict[str, Any]], got: dict[str, Any], rows_of: list[list[int]]) -> None:
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
            raise _Fail(f"requests started out of arrival order: {late} started before "
                        f"{early}, which arrived first (FIFO: {late} first ran in model call "
                        f"{first[late]}, {early} only in call {first[early]}; first model "
                        f"calls: {[rows for rows in rows_of[:4]]})")


def _check_waiting(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any],
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
            raise _Fail(f"a batch of {len(rows)} went at t={t0:.3f} s with only {len(queued)} "
                        f"queued (max_batch_size {B}) before the oldest (submitted "
                        f"t={oldest:.3f} s) had waited max_wait ({wait * 1e3:g} ms) — a partial "
                        "batch waits for more requests until then")
        due = max(oldest + wait, idle_since)
        if t0 > due + EPS_S:
            raise _Fail(f"requests queued since t={oldest:.3f} s were dispatched only at "
                        f"t={t0:.3f} s, {(t0 - due) * 1e3:.0f} ms after max_wait "
                        f"({wait * 1e3:g} ms) ran out with the engine idle")


def _check_static(calls: list[Any], rows_of: list[list[int]], finish_t: dict[int, float]) -> None:
    for n in range(1, len(calls)):
        joined = set(rows_of[n]) - set(rows_of[n - 1])
        if not joined:
            continue
        running = [r for r in rows_of[n - 1] if finish_t.get(r, math.inf) > calls[n][0]]
        if running:
            raise _Fail(f"model call {n}: request(s) {sorted(joined)} joined while requests "
                        f"{running} of the running batch were unfinished — with continuous="
                        "False a batch runs to completion before the next one forms")


def _check_reformed(p: dict[str, Any], reqs: list[dict[str, Any]], got: dict[str, Any],
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
                raise _Fail(f"model call {n} at t={t0:.3f} s dropped unfinished request(s) "
                            f"{gone}: every running request takes part in every step")
            kept = [r for r in unfinished if r in rows]
            newest_kept = max((admitted_at.get(r, -1) for r in kept), default=-1)
            for r in gone:
                if admitted_at.get(r, -1) < newest_kept:
                    raise _Fail(f"model call {n} preempted request {r} while a newer request "
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
            raise _Fail(f"model call {n} admitted {jumped} while preempted request(s) "
                        f"{waiting_preempted} waited — a preempted request goes back to the "
                        "front of the queue")
        if waiting and len(rows) < B and budget is None:
            raise _Fail(f"model call {n} at t={t0:.3f} s ran {len(rows)} of {B} rows while "
                        f"request(s) {waiting[:5]} were queued — in continuous batching a free "
                        "slot is refilled at the next step")
