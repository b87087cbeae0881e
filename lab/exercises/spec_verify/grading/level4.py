"""Level 4 - the generation loop on real models (`speculative_generate`).

Greedy cases are exact: the output must equal the target's own greedy decoding (computed here,
in the parent), a divergence excused only at a near tie. The child also returns the ledger of
every pass both models ran; from it the parent names stale caches, recomputation and split
verify passes, and measures α̂ and τ. Sampled cases test the law of the first tokens.
Every call gets fresh model wrappers (the stub's "both arrive with empty caches" holds on every
call), so a correct loop that never calls reset() passes.

Boundaries, special values and interactions, each with its case:
- k = 0 / 1: L4-greedy-k0, L4-greedy-k1; k = 8: L4-greedy-k8-budget-mid-block.
- max_new_tokens = 0 (return []): L4-greedy-budget-zero; = 1: L4-greedy-budget-one; exactly one
  full block (k + 1, every draft accepted): L4-greedy-budget-one-block; one more (k + 2):
  L4-greedy-budget-block-plus-one; the budget ending mid-block: L4-greedy-k2-budget-mid-block.
- all drafts accepted (draft == target): L4-greedy-all-accepted; (almost) none accepted (an
  unrelated draft): L4-greedy-unrelated-draft.
- prompt of one token (no prefill): L4-greedy-prompt-one; a long prompt: L4-greedy-long-prompt.
- EOS: inside a drafted block (L4-greedy-eos-in-draft), the first token (L4-greedy-eos-first-
  token), the bonus token of an all-accepted block (L4-greedy-eos-on-bonus), never produced
  (L4-greedy-eos-never); EOS id 0, the shipped pair's own EOS id (relabelled vocabularies, so
  `if eos_token_id and ...` fails deterministically): L4-greedy-eos-id0, L4-greedy-eos-on-bonus,
  L4-greedy-eos-id0-first-token, L4-sampled-eos-budget.
- EOS in the prompt (its last token: L4-greedy-eos-last-in-prompt; id 0 mid-prompt:
  L4-greedy-eos-id0-in-prompt), generated later too: only generated tokens end the run.
- the draft's cache after a block: cut to the accepted length, not the block's start (every
  greedy case with k >= 2: a draft pass that re-runs a token its cache held fails).
- EOS x budget: EOS at the last budgeted token: L4-greedy-eos-at-budget.
- the shipped pair, k in {0, 1, 2, 4, 8}, an EOS, the measured figures, the timed loop.
- sampling: same generator seed -> same output, global RNG untouched (L4-sampled-reproducible);
  sampled runs end exactly at EOS id 0 or the budget (L4-sampled-eos-budget); the law of the
  first tokens at T = 1 (k = 1), at T = 1 over three tokens with k = 2 (a block really drafts
  two, so each q row must belong to its drafted token), and at a strong temperature T = 0.35
  on a flat-ish target with an unrelated draft (L4-sampled-law-untempered); k = 0 sampled, every
  token the bonus from the target's own law (L4-sampled-law-T1.0-k0: a loop that decodes
  greedily, or from the draft, when there is nothing to verify fails there alone).

Power of the law cases (n = L4_LAW_RUNS = 600 runs each, 1 000 for the untempered case; two
tests per case, joint law and first token, each at FAMILY_ALPHA / (2 x cases); computed by
tests/spec_verify/test_power.py). The bug: drafts sampled from softmax(draft_logits / T) but
the verifier handed softmax(draft_logits) as q. At T = 1 the two coincide (nothing to detect);
the untempered case sharpens a flat-ish target (an unrelated draft, T = 0.35) so the first
token's law moves by a total variation of 0.135, detected by the first-token test alone with
probability > 0.9999 (the miss probability is ~3e-7; still > 0.9999 at 800 runs):

    case                         TV(untempered)  power(untempered)
    L4-sampled-law-T1.0                   0.000             0.0001
    L4-sampled-law-T1.0-3tok-k2           0.000             0.0001
    L4-sampled-law-untempered             0.135            >0.9999
    L4-sampled-law-T1.0-k0                0.000             0.0001
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import torch

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.grading import blocks, stats
from lab.exercises.spec_verify.grading.common import (
    FAMILY_ALPHA,
    first_mismatch,
    greedy_equal,
    greedy_with_gaps,
    is_tokens,
)
from lab.exercises.spec_verify.lm import CausalLM, Pass
from lab.grader.api import Case, RunContext, Verdict
from questions.wording import noun

# Each run is a whole generation on tiny transformers models (~5 ms, ~10 ms with 3 tokens, on a
# CPU): the runs are most of the level's grading time. The untempered case gets 1.25x the runs
# its first-token test needs for > 0.9999 against the untempered-q bug (tests/spec_verify/
# test_power.py checks the margin); the T = 1 cases catch no listed bug by design (q is the
# same either way) but any loop whose law is off: the q-misaligned loop (first-token TV ~0.6
# on the three-token case) is caught with power ~1 from 200 runs.
L4_LAW_RUNS = 600
# (name, T, k, tokens, runs, model params): the untempered case has a flat-ish target sharpened
# by a strong temperature and an unrelated draft, so softmax(l / T) and softmax(l) differ a lot
LAW_CASES: list[tuple[str, float, int, int, int, dict[str, Any]]] = [
    ("T1.0", 1.0, 1, 2, L4_LAW_RUNS, {"law_pair": [3, 8, 32, 1, 0.3]}),
    ("T1.0-3tok-k2", 1.0, 2, 3, L4_LAW_RUNS, {"law_pair": [3, 8, 32, 1, 0.3]}),
    ("untempered", 0.35, 2, 2, 1_000, {"law_pair": [5, 8, 32, 1, 0.0, 9]}),
    # k = 0 sampled: no draft at all, every token the bonus drawn from the target's own law (a
    # loop that falls back to greedy, or to the draft, when k = 0 fails here alone)
    ("T1.0-k0", 1.0, 0, 2, L4_LAW_RUNS, {"law_pair": [3, 8, 32, 1, 0.3]}),
]
SHIPPED_K = [0, 1, 2, 4, 8]


def _tiny(name: str, pair_seed: int = 0, prompt_seed: int = 1, **p: Any
          ) -> tuple[str, dict[str, Any]]:
    return name, {"kind": "greedy", "model": "tiny", "pair_seed": pair_seed,
                  "prompt_seed": prompt_seed, **p}


def cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    out: list[Case] = []
    fixed = [
        _tiny("budget-zero", k=4, max_new_tokens=0),
        _tiny("budget-one", k=4, max_new_tokens=1),
        _tiny("prompt-one", k=2, max_new_tokens=9, prompt_len=1),
        _tiny("k0", k=0, max_new_tokens=12),
        _tiny("k1", k=1, max_new_tokens=20),
        _tiny("budget-one-block", k=4, max_new_tokens=5, noise=0.0),
        _tiny("budget-block-plus-one", k=4, max_new_tokens=6, noise=0.0),
        _tiny("k2-budget-mid-block", k=2, max_new_tokens=13),
        _tiny("eos-first-token", k=4, max_new_tokens=10, eos_at=0),
        _tiny("eos-id0-first-token", 4, 2, k=3, max_new_tokens=10, eos_at=0, eos_zero=True),
        _tiny("eos-in-draft", k=4, max_new_tokens=40, eos_at=9),
        _tiny("eos-id0", 1, 3, k=4, max_new_tokens=30, eos_at=9, eos_zero=True),
        _tiny("eos-on-bonus", 2, 5, k=3, max_new_tokens=20, noise=0.0, eos_at=3, eos_zero=True),
        _tiny("eos-at-budget", k=2, max_new_tokens=8, eos_at=7),
        _tiny("eos-never", k=2, max_new_tokens=10, eos_at=30),
        _tiny("eos-last-in-prompt", 0, 24, k=3, max_new_tokens=24, prompt_len=8,
              eos_prompt_at=7),
        _tiny("eos-id0-in-prompt", 0, 22, k=4, max_new_tokens=24, prompt_len=8,
              eos_prompt_at=3, eos_zero=True),
        _tiny("all-accepted", 3, 6, k=4, max_new_tokens=20, noise=0.0),
        _tiny("unrelated-draft", 3, 7, k=4, max_new_tokens=16, draft_seed=99),
        _tiny("k4", k=4, max_new_tokens=31),
        _tiny("k8-budget-mid-block", k=8, max_new_tokens=21),
        _tiny("long-prompt", k=2, max_new_tokens=16, prompt_len=40),
    ]
    for name, p in fixed:
        out.append(Case(f"L4-greedy-{name}", 4, p, size=int(p["max_new_tokens"]), timeout_s=60))
    for i in range(4):
        name, p = _tiny(f"hidden-{i}", rng.randrange(1 << 20), rng.randrange(1 << 20),
                        k=rng.choice([0, 1, 2, 4, 8]), max_new_tokens=rng.randint(5, 40),
                        eos_at=rng.choice([None, rng.randint(0, 20)]),
                        eos_zero=rng.random() < 0.5)
        out.append(Case(f"L4-greedy-{name}", 4, p, size=45, timeout_s=60))
    # sampling ----------------------------------------------------------------------------
    s = seed % 100_000
    out.append(Case("L4-sampled-reproducible", 4, {
        "kind": "repro", "model": "tiny", "pair_seed": 1, "prompt_seed": 2, "k": 3,
        "max_new_tokens": 12, "temperature": 0.8}, size=50, timeout_s=60))
    out.append(Case("L4-sampled-eos-budget", 4, {
        "kind": "sampled_structure", "model": "tiny", "pair_seed": 1, "prompt_seed": 3, "k": 4,
        "max_new_tokens": 9, "temperature": 1.0, "runs": 40, "seed": s, "eos_at": 3,
        "eos_zero": True}, size=60, timeout_s=60,
        description="sampled runs stop exactly at EOS (id 0) or the budget"))
    alpha = FAMILY_ALPHA / (2 * len(LAW_CASES))
    for name, t, k, n, runs, model in LAW_CASES:
        out.append(Case(f"L4-sampled-law-{name}", 4, {
            "kind": "law", "model": "law", **model, "k": k, "max_new_tokens": n,
            "temperature": t, "runs": runs, "alpha": alpha, "seed": s},
            size=300, timeout_s=240,
            description=f"the first {n} tokens follow the target's own sampling law at "
                        f"temperature {t} (k = {k})"))
    # the shipped pair (loaded once, the most expensive) -------------------------------------
    for i, k in enumerate(SHIPPED_K):
        out.append(Case(f"L4-shipped-k{k}", 4, {"kind": "greedy", "model": "shipped", "prompt": i,
                                                 "k": k, "max_new_tokens": 23 + i},
                        size=1000 + k, timeout_s=300))
    out.append(Case("L4-shipped-hidden", 4, {
        "kind": "greedy", "model": "shipped", "prompt": rng.randrange(len(inputs.SHIPPED_PROMPTS)),
        "k": rng.choice([1, 2, 4, 8]), "max_new_tokens": rng.randint(8, 40),
        "eos_at": rng.choice([None, rng.randint(2, 12)])}, size=1020, timeout_s=300))
    out.append(Case("L4-shipped-eos", 4, {"kind": "greedy", "model": "shipped", "prompt": 1,
                                          "k": 4, "max_new_tokens": 40, "eos_at": 11},
                    size=1040, timeout_s=300))
    out.append(Case("L4-shipped-metrics", 4, {"kind": "greedy", "model": "shipped", "prompt": 2,
                                              "k": 4, "max_new_tokens": 64},
                    size=1064, timeout_s=600, report=True,
                    description="α̂, τ vs (1 − α^(k+1))/(1 − α), target passes per token"))
    # short: ungated, and each side is called ~7 times (warm-up, calibration, ABBA rounds)
    out.append(Case("L4-shipped-timed", 4, {"kind": "timed", "model": "shipped", "prompt": 3,
                                            "k": 4, "max_new_tokens": 16},
                    size=1100, timeout_s=300, timed=True,
                    description="wall clock of your loop vs the reference loop (timed by the "
                                "grader, round trips)"))
    return out


# ---------------------------------------------------------------------------------------------
# Expected (parent)


def expected(case: Case, ctx: RunContext) -> Any:
    p = case.params
    kind = p["kind"]
    if kind == "greedy":
        return greedy_with_gaps(p, ctx, int(p["max_new_tokens"]))
    if kind == "timed":  # the reference's own run: what the parent times the learner against
        from lab.exercises.spec_verify import drive
        from lab.exercises.spec_verify.grading.common import reference

        return drive.run(reference(), case, ctx)  # raw, like the reference child's timed runs
    if kind == "sampled_structure":
        _, _, _, eos = inputs.models(p, "cpu")
        return {"eos": eos, "V": 64}
    if kind == "law":
        target, _, prompt, _ = inputs.models(p, "cpu")
        law = target_law(target, prompt, int(p["max_new_tokens"]), float(p["temperature"]))
        return {"law": [[list(key), pr] for key, pr in law.items()]}
    return None


def target_law(model: Any, prompt: list[int], length: int, temp: float
               ) -> dict[tuple[int, ...], float]:
    """Exact law of the target's first `length` sampled tokens (V^length outcomes, small V)."""
    steps = next_token_laws(model, prompt, length, temp)
    return stats.sequences_law(steps, length)


def next_token_laws(model: Any, prompt: list[int], length: int, temp: float
                    ) -> dict[tuple[int, ...], list[float]]:
    """softmax(logits / T) after every prefix of fewer than `length` tokens."""
    v = int(model.config.vocab_size)
    steps: dict[tuple[int, ...], list[float]] = {}
    for n in range(length):
        for prefix in itertools.product(range(v), repeat=n):
            lm = CausalLM(model)
            logits = lm.forward(prompt + list(prefix))[-1].double()
            steps[prefix] = torch.softmax(logits / temp, -1).tolist()
    return steps


# ---------------------------------------------------------------------------------------------
# Check (parent)


def check(case: Case, got: Any, expected: Any) -> Verdict:
    p = case.params
    kind = p["kind"]
    if kind == "repro":
        return blocks.repro(got)
    if kind == "sampled_structure":
        for out in _outs(got, int(p["runs"])):
            msg = ending(out, int(p["max_new_tokens"]), expected["eos"], expected["V"])
            if msg:
                return Verdict(False, msg)
        return Verdict(True)
    if kind == "timed":
        want = expected
        if got != want:
            return Verdict(False, f"greedy output differs from the reference's (which equals the "
                                  f"target's plain greedy decoding): expected {want}, "
                                  f"got {got!r:.300}")
        return Verdict(True)
    if kind == "law":
        return _check_law(p, got, expected)
    return _check_greedy(p, got, expected)


def _outs(got: Any, n: int) -> list[Any]:
    outs = got.get("outs") if isinstance(got, dict) else None
    if not isinstance(outs, list) or len(outs) != n:
        return [f"expected the outputs of {n} calls, got {outs!r:.80}"]
    return outs


def _check_law(p: dict[str, Any], got: Any, expected: Any) -> Verdict:
    budget, temp, alpha = int(p["max_new_tokens"]), float(p["temperature"]), float(p["alpha"])
    counts: Counter[tuple[int, ...]] = Counter()
    for out in _outs(got, int(p["runs"])):
        if not is_tokens(out) or len(out) != budget:
            return Verdict(False, f"sampled generation must return exactly max_new_tokens = "
                                  f"{budget} tokens here (no EOS), got {out!r:.80}")
        counts[tuple(out)] += 1
    law = {tuple(key): pr for key, pr in expected["law"]}
    first_law: Counter[int] = Counter()
    for key, pr in law.items():
        first_law[key[0]] += pr
    first: Counter[int] = Counter()
    for key, c in counts.items():
        first[key[0]] += c
    hint = (f"q must be the draft distribution the token was sampled from, softmax(draft_logits "
            f"/ T) at the same temperature T = {temp} (not the raw logits' softmax), p the "
            f"target's softmax(logits / T), and each q row must belong to its drafted token.")
    for what, res in (("the first token", stats.chi_square(first, dict(first_law))),
                      (f"the first {budget} tokens jointly", stats.chi_square(counts, law))):
        if res.impossible or res.p_value < alpha:
            detail = (f"{noun(len(res.impossible), 'impossible outcome')} "
                      f"{list(res.impossible)[:3]}" if res.impossible else
                      f"chi-square {res.stat:.1f} on {res.df} df, p = {res.p_value:.2e} < "
                      f"{alpha:.1e}")
            return Verdict(False, f"at temperature {temp} the sampled tokens do not follow the "
                                  f"target's sampling law ({what}): {detail} over {res.n} runs "
                                  f"({res.table}). {hint}")
    return Verdict(True, f"law ok (p = {res.p_value:.3f})", {"p_value": res.p_value})


def _check_greedy(p: dict[str, Any], got: Any, exp: dict[str, Any]) -> Verdict:
    out: Any = got.get("out") if isinstance(got, dict) else got
    budget, eos, plain = int(p["max_new_tokens"]), exp["eos"], exp["plain"]
    msg = ending(out, budget, eos, exp["V"])
    if msg:
        if eos is not None and eos in exp["prompt"] and "without reaching EOS" in msg:
            msg += (f" - the prompt holds EOS ({eos}) at index {exp['prompt'].index(eos)}: only "
                    "generated tokens end the generation, never the prompt's")
        return Verdict(False, msg)
    want = plain[: plain.index(eos) + 1] if eos is not None and eos in plain else plain
    rep = trace_report(got.get("ledger", []), exp["prompt"], out, int(p["k"]))
    for fault in ("target_fault", "pass_fault", "draft_fault"):
        if rep[fault]:
            return Verdict(False, rep[fault])
    metrics = _metrics(rep, len(out))
    note = _metrics_note(metrics, int(p["k"]))
    return greedy_equal(out, want, exp, note, metrics, "the output")


def ending(out: Any, budget: int, eos: int | None, vocab: int | None) -> str:
    """'' when `out` ends where it must (EOS or the budget), else what is wrong."""
    if not is_tokens(out):
        return f"speculative_generate must return list[int], got {out!r:.80}"
    if vocab is not None and any(not 0 <= t < vocab for t in out):
        return f"token ids must be in [0, {vocab}), got {out}"
    if len(out) > budget:
        return (f"returned {len(out)} tokens but max_new_tokens = {budget} (budget overrun by "
                f"{len(out) - budget}): clip the last block to the budget")
    if eos is not None and eos in out[:-1]:
        i = out.index(eos)
        zero = (" - EOS id 0 is falsy: test `eos_token_id is not None`, not `if eos_token_id`"
                if eos == 0 else "")
        return (f"generation went on after EOS ({eos}) at index {i}: drop what follows the first "
                f"EOS, even inside an accepted block{zero} (got {out})")
    if len(out) < budget and (eos is None or not out or out[-1] != eos):
        return (f"returned {len(out)} tokens without reaching EOS: generate exactly "
                f"max_new_tokens = {budget} unless EOS comes first (got {out})")
    return ""


# ---------------------------------------------------------------------------------------------
# The ledger: what each pass ran on


def _entries(rows: Any) -> list[tuple[str, Pass | None]]:
    out: list[tuple[str, Pass | None]] = []
    for row in rows if isinstance(rows, list) else []:
        if len(row) == 1:
            out.append((str(row[0]), None))
        else:
            out.append((str(row[0]), Pass(cached=int(row[1]),
                                          context=tuple(int(t) for t in row[2]))))
    return out


def trace_report(rows: Any, prompt: list[int], out: list[int], k: int) -> dict[str, Any]:
    """Stale-cache, recompute and pass-count diagnosis, and acceptance figures, from the
    ledger of the passes each model ran (the learner's reset() cannot clear it)."""
    entries = _entries(rows)
    seq = list(prompt) + list(out)
    t_passes = [ps for who, ps in entries if who == "target" and ps is not None]
    d_passes = [ps for who, ps in entries if who == "draft" and ps is not None]
    rep: dict[str, Any] = {"target_passes": len(t_passes), "draft_passes": len(d_passes),
                           "target_fault": "", "draft_fault": "", "pass_fault": ""}
    for i, ps in enumerate(t_passes):
        bad = first_mismatch(ps.context[: ps.cached], seq)
        if bad is not None:
            rep["target_fault"] = (
                f"target pass #{i + 1} ran with token {ps.context[bad]} at position {bad} still "
                f"in its KV cache, but the output has "
                f"{seq[bad] if bad < len(seq) else 'nothing'} there: rejected drafted tokens were "
                f"left in the cache (cache not cropped) - crop the target's cache to the accepted "
                f"length after each block")
            break
    for i, ps in enumerate(d_passes):
        bad = first_mismatch(ps.context, seq)
        start = min(len(seq), len(ps.context)) if bad is None else bad
        if len(ps.context) - start > k + 1:
            rep["draft_fault"] = (
                f"draft pass #{i + 1} ran on {len(ps.context) - start} tokens that are not the "
                f"output (the draft's context departs from it at position {start}: it has "
                f"{ps.context[start]}, the output {seq[start] if start < len(seq) else 'nothing'})"
                f" - the draft must be cropped after each block and fed the correction/bonus "
                f"token (and any accepted token it has not processed) before drafting again")
            break
    late = _after_the_end(entries, seq) if out else None
    if late is not None:
        rep["pass_fault"] = (
            f"target pass #{late + 1} ran after the output was complete ({len(out)} tokens: "
            f"max_new_tokens reached or EOS emitted): a block past the end - stop the loop as "
            f"soon as the budget is reached or EOS is emitted")
    rep["pass_fault"] = (rep["pass_fault"] or _recompute_fault(entries)
                         or _passes_per_block_fault(entries, k))
    verify = [ps for ps in t_passes if len(ps.context) >= len(prompt)]
    accepted = rejected = 0
    for ps in verify:
        # drafted tokens: all new tokens but the first (the last committed token, fed again)
        pos = ps.cached + 1
        for tok in ps.new_tokens[1:]:
            if pos >= len(seq):
                break  # past the end of the output (budget/EOS): not judged
            if tok != seq[pos]:
                rejected += 1
                break
            accepted += 1
            pos += 1
    rep["verify_passes"] = len(verify)
    rep["accepted"] = accepted
    rep["judged"] = accepted + rejected
    return rep


def _recompute_fault(entries: list[tuple[str, Pass | None]]) -> str:
    """A pass that re-runs tokens the model's cache already held (reset() or crop() back, then
    the sequence again): no KV-cache reuse. For the target, a pass whose first new token sits
    where the previous pass had already cached that same token after the same prefix (a new
    block starts at the correction, which differs from the rejected draft it replaces); for the
    draft, any pass from an empty cache after its first."""
    for name in ("target", "draft"):
        prev: tuple[int, Pass] | None = None
        reset = False
        num = 0
        for who, ps in entries:
            if who != name:
                continue
            if ps is None:
                reset = prev is not None
                continue
            num += 1
            if prev is not None:
                pnum, pp = prev
                c = ps.cached
                again = (c < len(pp.context) and ps.context[: c + 1] == pp.context[: c + 1])
                again = again or (name == "draft" and c == 0)
                if again:
                    why = (f"{name}.reset() was called in between" if reset else
                           f"its cache was cropped back to {c} tokens"
                           + (", the block's start instead of the accepted length"
                              if name == "draft" and c > 0 else ""))
                    return (f"{name} pass #{num} re-ran token {ps.context[c]} at position {c}, "
                            f"which pass #{pnum} had already put in its KV cache after the same "
                            f"prefix ({why}): it recomputes the cached prefix instead of reusing "
                            f"the KV cache - keep the cache across blocks, crop it to the "
                            f"accepted length and feed only the tokens it has not seen")
            prev, reset = (num, ps), False
    return ""


def _after_the_end(entries: list[tuple[str, Pass | None]], seq: list[int]) -> int | None:
    """The index among the target passes of one that opened a block after the output was
    complete: drafted first (a draft pass just before it), then fed from the last output token
    on (every real block's pass starts before it). A pass right after another target pass is
    left to `_passes_per_block_fault` (one block's verification split in two)."""
    n = 0
    for j, (who, ps) in enumerate(entries):
        if who != "target" or ps is None:
            continue
        before = next((w for w, q in reversed(entries[:j]) if q is not None), None)
        if ps.cached >= len(seq) - 1 and before == "draft":
            return n
        n += 1
    return None


def _passes_per_block_fault(entries: list[tuple[str, Pass | None]], k: int) -> str:
    """With k > 0 every block drafts before its one target pass, so two target passes with no
    draft pass between them split one block's verification (only the very last may not draft:
    the budget's final token needs no draft)."""
    if k <= 0:
        return ""
    order = [(who, ps) for who, ps in entries if ps is not None]
    t_idx = [i for i, (who, _) in enumerate(order) if who == "target"]
    for a, b in itertools.pairwise(t_idx[:-1]):  # the last pass is exempt
        if not any(who == "draft" for who, _ in order[a + 1 : b]):
            na, nb = t_idx.index(a) + 1, t_idx.index(b) + 1
            return (f"target passes #{na} and #{nb} ran one after the other with no draft pass "
                    f"between them (more than one target pass per block): score "
                    f"[last committed token, x_1..x_k] in ONE target forward per block")
    return ""


def _metrics(rep: dict[str, Any], n: int) -> dict[str, float]:
    m: dict[str, float] = {
        "target_passes_per_token": rep["target_passes"] / max(n, 1),
        "tau": n / max(rep["verify_passes"], 1),
    }
    if rep["judged"]:
        # per-position acceptance: accepted / (accepted + first rejections), the estimate the
        # formula (1 - alpha^(k+1)) / (1 - alpha) assumes
        m["alpha"] = rep["accepted"] / rep["judged"]
    return m


def _metrics_note(m: dict[str, float], k: int) -> str:
    if "alpha" not in m:
        return f"τ = {m['tau']:.2f} tokens per target pass (k = {k})"
    a = m["alpha"]
    formula = (k + 1.0) if a >= 1 else (1 - a ** (k + 1)) / (1 - a)
    m["tau_formula"] = formula
    return (f"α̂ = {a:.2f}, τ = {m['tau']:.2f} tokens per target pass vs formula "
            f"(1 − α^(k+1))/(1 − α) = {formula:.2f} (k = {k}); "
            f"{m['target_passes_per_token']:.2f} target passes per token")
