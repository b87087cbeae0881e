"""Level 4 - OpenAI-style completions on the shipped model (`generate`), equal to the reference.

Each request has its own sampling parameters, seed, stop strings and `top_logprobs`; the
model's logits are a function of the sequence alone (lab/exercises/sampling/lm.py), so a correct
engine emits exactly the reference's tokens for the same seeds. Boundaries and pairs, each with
its case: greedy with top-5 alternatives (L4-greedy-logprobs); EOS (id 0, a falsy id) first
(L4-eos-first) and beside rows that go on (L4-eos-in-batch); a stop string hit on the first
token and one never hit (L4-batch-mixed); two stop strings where the later-listed one occurs
first in the text (L4-stop-earliest); a stop string spread over
several tokens (L4-stop-spans-tokens); max_tokens 0 and 1 (L4-max-tokens-edges); the same request
twice with the same seed beside another (L4-same-seed); penalties that change a greedy
continuation (L4-penalties-greedy); random requests (L4-hidden-*).
"""

from __future__ import annotations

import math
import random
from typing import Any

from lab.exercises.sampling import inputs
from lab.grader.api import Case, Verdict

LOGPROB_TOL = 1e-4
PROMPTS = [
    "def add(a, b):\n    return",
    "import os\nimport",
    "class Stack:\n    def",
    "for i in range(",
    'if __name__ == "__main__":\n    main()\n',
    "    with open(path) as f:\n        ",
]


def _req(prompt: int, seed: int, max_tokens: int = 16, **extra: Any) -> dict[str, Any]:
    return {"prompt": PROMPTS[prompt], "max_tokens": max_tokens, "seed": seed, **extra}


def cases(seed: int) -> list[Case]:
    def case(name: str, reqs: list[dict[str, Any]], desc: str,
             probe: dict[str, Any] | None = None) -> Case:
        size = sum(int(r["max_tokens"]) for r in reqs) + 1
        params: dict[str, Any] = {"requests": reqs, **({"probe": probe} if probe else {})}
        return Case(f"L4-{name}", 4, params, size=size, timeout_s=120, description=desc)

    out = [
        case("max-tokens-edges", [_req(0, 1, 0), _req(1, 2, 1, top_logprobs=2)],
             "max_tokens 0 (empty, finish 'length') and 1"),
        case("eos-first", [_req(4, 5, 8, temperature=0.0, top_logprobs=2)],
             "greedy emits EOS (id 0) first: finish 'stop', empty text, the EOS token listed"),
        case("greedy-logprobs", [_req(0, 1, 12, temperature=0.0, top_logprobs=5)],
             "T = 0 with the top-5 alternatives per token"),
        case("stop-earliest", [_req(0, 1, 16, temperature=0.0, stop=["\n", " a\n"])],
             "two stop strings complete at the same token; the second-listed one starts "
             "earlier in the text: cut there"),
        case("stop-spans-tokens", [_req(0, 1, 16, temperature=0.0, stop=["\n\ndef"])],
             "a stop string spread over three tokens"),
        case("eos-in-batch", [_req(4, 1, 8, temperature=1.0), _req(3, 4, 10, temperature=0.7,
                                                                   top_logprobs=1)],
             "one row ends at EOS, the other goes on"),
        case("same-seed", [_req(2, 9, 12, temperature=1.0), _req(5, 3, 12, temperature=1.2,
                                                                top_k=30),
                           _req(2, 9, 12, temperature=1.0)],
             "the same request and seed twice beside another: identical completions"),
        case("penalties-greedy", [_req(0, 1, 16, temperature=0.0, repetition_penalty=1.5,
                                       frequency_penalty=0.5, presence_penalty=0.3,
                                       top_logprobs=1)],
             "penalties over the prompt and the growing output change a greedy continuation"),
        case("batch-mixed", [
            _req(0, 1, 16, temperature=0.0, top_logprobs=3),
            _req(1, 2, 16, temperature=0.8, top_p=0.9, stop=["\n"]),
            _req(2, 3, 16, temperature=1.0, top_k=20, repetition_penalty=1.3, stop=["zzz"]),
            _req(3, 4, 16, temperature=0.7, presence_penalty=0.5, frequency_penalty=0.5,
                 min_p=0.05, top_logprobs=2)],
             "four requests, each its own parameters; a stop string hit on the first token and "
             "one never hit"),
        case("ends-coincide", [_req(4, 5, 1, temperature=0.0),
                               _req(0, 1, 2, temperature=0.0, stop=["\n"])],
             "EOS, and a stop string, on the last token max_tokens allows: both finish 'stop' "
             "(EOS, then stop strings, are checked before the length)"),
        # the raw model never ties two logits nor repeats a token: a probe (lm.Probe) edits its
        # rows as a function of the sequence alone, for the tie order and self-overlapping stops
        case("logprobs-ties", [_req(0, 1, 8, temperature=0.0, top_logprobs=3),
                               _req(3, 2, 8, temperature=0.9, top_logprobs=4)],
             "real logits with id 2 tied to each step's runner-up: the alternatives list the "
             "lower id first", probe={"tie": 2}),
        case("stop-self-overlap", [_req(1, 1, 10, temperature=0.0, stop=["aab"])],
             "output a a a b: the stop string 'aab' overlaps itself ('aa' + 'a' is still a "
             "partial match); cut before it: 'a'", probe={"repeat": [66, 67, 3]}),
        case("stop-twice-in-token", [_req(1, 1, 6, temperature=0.0, stop=["==="])],
             "the first token '====' holds '===' twice, overlapping: cut before the first, ''",
             probe={"repeat": [771, 771, 99]}),
    ]
    rng = random.Random(seed)
    for i in range(2):
        reqs = []
        for _ in range(3):
            prm = inputs.random_params(rng)
            prm["top_k"] = min(int(prm["top_k"]), 4096)
            reqs.append(_req(rng.randrange(len(PROMPTS)), rng.randrange(1 << 20),
                             rng.choice([4, 8, 12]), top_logprobs=rng.choice([0, 1, 3]),
                             stop=rng.choice([[], ["\n"], [")", ":"]]), **prm))
        out.append(case(f"hidden-{i}", reqs, "random requests"))
    return out


def check(case: Case, got: Any, expected: Any) -> Verdict:
    outs = got.get("out") if isinstance(got, dict) else None
    want = expected["out"]
    reqs = case.params["requests"]
    if not isinstance(outs, list) or len(outs) != len(want):
        return Verdict(False, f"generate must return a list of {len(want)} dicts, one per "
                              f"request in order; got {outs!r:.200}")
    for r, (o, w, req) in enumerate(zip(outs, want, reqs, strict=True)):
        msg = _one(o, w, req)
        if msg:
            shown = {k: v for k, v in req.items() if k != "prompt"}
            return Verdict(False, f"request {r} ({req['prompt']!r:.40}, {shown}): {msg}")
    return Verdict(True)


def _one(o: Any, w: dict[str, Any], req: dict[str, Any]) -> str | None:
    if not isinstance(o, dict):
        return f"expected a dict with text, token_ids, finish_reason, logprobs; got {o!r:.100}"
    missing = [k for k in ("text", "token_ids", "finish_reason", "logprobs") if k not in o]
    if missing:
        return f"missing keys {missing}"
    ids, want_ids = o["token_ids"], w["token_ids"]
    if ids != want_ids:
        i = next((j for j, (a, b) in enumerate(zip(ids, want_ids, strict=False)) if a != b),
                 min(len(ids), len(want_ids)))
        if i == len(want_ids) and len(ids) > len(want_ids):
            why = _why_longer(w, req)
            return (f"generated {len(ids)} tokens, the reference stopped after {len(want_ids)} "
                    f"({w['finish_reason']}): {why}")
        if i == len(ids):
            return (f"stopped after {len(ids)} tokens ({o['finish_reason']!r}), the reference "
                    f"went on to {len(want_ids)}: expected {want_ids}, got {ids}")
        return (f"token {i} differs: expected id {want_ids[i]}, got {ids[i]} (expected "
                f"{want_ids}, got {ids}) - process the row's logits with its own parameters and "
                f"history (prompt + tokens so far), one draw from the request's own generator per "
                f"sampled token (none when T = 0)")
    if o["finish_reason"] != w["finish_reason"]:
        same_step = (" - the token that reached max_tokens also ended the request (EOS or a stop "
                     "string): check EOS, then the stop strings, before the length"
                     if w["finish_reason"] == "stop" and len(want_ids) == int(req["max_tokens"])
                     else "")
        return (f"finish_reason {o['finish_reason']!r}, expected {w['finish_reason']!r} ('stop' "
                f"for EOS or a stop string, 'length' at max_tokens){same_step}")
    if o["text"] != w["text"]:
        stops = [s for s in req.get("stop", []) if s and s in str(o["text"])]
        extra = (f" - the text must end just before the earliest stop string (found {stops} in "
                 f"yours)" if stops else "")
        if not stops and req.get("stop") and len(str(o["text"])) > len(w["text"]):
            extra = (" - cut just before the EARLIEST occurrence of any stop string in the "
                     "decoded output (its first occurrence, text.find, even where it occurs "
                     "twice or overlaps itself), whichever of them is listed first")
        return f"text {o['text']!r} expected {w['text']!r}{extra}"
    return _logprobs(o["logprobs"], w["logprobs"], int(req.get("top_logprobs", 0)))


def _why_longer(w: dict[str, Any], req: dict[str, Any]) -> str:
    last = w["token_ids"][-1] if w["token_ids"] else None
    if w["finish_reason"] == "length":
        return f"max_tokens is {req['max_tokens']}"
    if last == 0 and not any(s and s in w["text"] for s in req.get("stop", [])):
        return "the last token was EOS (id 0 - a falsy id: `if eos_id and ...` skips it)"
    why = ("a stop string appeared in the text - check the decoded text after every token, "
           "for every stop string")
    for stop in req.get("stop", []):
        if _self_overlapping(str(stop)):
            why += (f" ({stop!r} overlaps itself: in repeated output a partial match can restart "
                    f"inside a failed one, which a matcher that starts over on a mismatch "
                    f"misses - search the whole decoded text, e.g. text.find(stop))")
            break
    return why


def _self_overlapping(stop: str) -> bool:
    """Some proper prefix of `stop` ends with its own beginning ('aa' in 'aab', '==' in '===')."""
    return any(stop[:i][:n] == stop[:i][-n:] for i in range(2, len(stop)) for n in range(1, i))


def _close(a: Any, b: float) -> bool:
    return isinstance(a, int | float) and not isinstance(a, bool) and (
        math.isclose(float(a), b, abs_tol=LOGPROB_TOL) or (math.isinf(a) and a == b))


def _logprobs(got: Any, want: dict[str, Any], n: int) -> str | None:
    content = got.get("content") if isinstance(got, dict) else None
    exp = want["content"]
    if not isinstance(content, list) or len(content) != len(exp):
        return (f"logprobs must be {{'content': [one entry per generated token]}} with "
                f"{len(exp)} entries; got {got!r:.150}")
    for i, (g, e) in enumerate(zip(content, exp, strict=True)):
        if not isinstance(g, dict) or g.get("token") != e["token"]:
            return f"logprobs entry {i}: token {g!r:.80}, expected {e['token']!r}"
        if not _close(g.get("logprob"), e["logprob"]):
            return (f"logprobs entry {i} ({e['token']!r}): logprob {g.get('logprob')!r}, expected "
                    f"{e['logprob']:.6f} - the model's raw log-softmax, before penalties, "
                    f"temperature and filtering (vLLM's default)")
        alts, want_alts = g.get("top_logprobs", []), e.get("top_logprobs", [])
        if n == 0:
            if alts:
                return f"top_logprobs = 0 asks for no alternatives; entry {i} has {len(alts)}"
            continue
        if not isinstance(alts, list) or len(alts) != n:
            return f"entry {i}: top_logprobs must list {n} alternatives, got {alts!r:.150}"
        for j, (a, b) in enumerate(zip(alts, want_alts, strict=True)):
            if not isinstance(a, dict) or a.get("token") != b["token"] or not _close(
                    a.get("logprob"), b["logprob"]):
                return (f"entry {i}: alternative {j} is {a!r:.80}, expected {b} - the n "
                        f"highest raw log-probabilities, highest first, ties by lower id")
    return None
