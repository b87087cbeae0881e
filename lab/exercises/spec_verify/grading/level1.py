"""Level 1 - greedy verification of one block (`verify_greedy`), judged exactly.

Boundaries, special values and interactions, each with its case:
- k = 0 (the block is the bonus alone): L1-k0; k = 1 accepted / rejected: L1-k1-accepted,
  L1-k1-rejected; the longest block, k = 8, all accepted: L1-all-accepted-k8.
- none accepted (first draft wrong, later ones would match): L1-first-rejected; all accepted
  (the bonus from row k): L1-all-accepted; a mismatch mid-block with tempting matches after it:
  L1-mid-reject.
- vocabulary of 1 (everything matches) and 2: L1-vocab-1, L1-vocab-2.
- ties in the argmax (two ids share a row's top logit; the lowest id is the argmax, a draft equal
  to the other tied id is a mismatch): L1-tie-reject; a tie at the accepted prefix: L1-tie-accept.
- token id 0 as the argmax and as a drafted token (a falsy id): L1-id0-accepted, L1-id0-rejected.
- the accept loop to the block's end with the last draft rejected: L1-last-rejected-k8.
- precision: top-2 logits 1e-4 apart at ~10, equal in bf16/fp16: L1-near-tie.
- real logits from the shipped pair, k in {0, 1, 2, 4, 8}: L1-model-k*.
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.grading.common import is_tokens, reference
from lab.grader.api import Case, RunContext, Verdict


def cases(seed: int) -> list[Case]:
    rng = random.Random(seed)

    def synth(name: str, v: int, k: int, accept: int, case_seed: int, desc: str = "",
              **extra: Any) -> Case:
        return Case(f"L1-{name}", 1, {"V": v, "k": k, "accept": accept, "seed": case_seed,
                                      **extra}, size=k + 1, description=desc)

    out = [
        synth("k0", 50, 0, 0, 1, "k = 0: emit argmax(row 0) only"),
        synth("vocab-1", 1, 2, 2, 6, "V = 1: everything matches"),
        synth("k1-accepted", 50, 1, 1, 11, "k = 1, accepted: the draft then argmax(row 1)"),
        synth("k1-rejected", 50, 1, 0, 12, "k = 1, rejected: argmax(row 0) only"),
        synth("vocab-2", 2, 3, 1, 13, "V = 2: one accepted, then a correction"),
        synth("id0-accepted", 50, 3, 3, 14, "token id 0 is every row's argmax and every draft",
              zero=True),
        synth("id0-rejected", 50, 3, 1, 15, "id 0 is the argmax; the second draft is not 0",
              zero=True),
        synth("tie-reject", 50, 3, 1, 16, "two ids tie for every row's top logit: the argmax is "
              "the lower id; the second draft is the other tied id (a mismatch)", tie=True),
        synth("tie-accept", 50, 3, 3, 17, "ties in every row; the drafts are the lower tied ids",
              tie=True),
        synth("all-accepted", 50, 4, 4, 2, "every drafted token matches: emit them all plus the "
              "bonus argmax(row k)"),
        synth("first-rejected", 50, 4, 0, 3, "the first drafted token mismatches, later ones "
              "would match"),
        synth("mid-reject", 1000, 8, 3, 4, "three accepted, then a correction; drafts after it "
              "match their rows"),
        synth("all-accepted-k8", 1000, 8, 8, 5),
        synth("last-rejected-k8", 1000, 8, 7, 7, "seven accepted, the eighth (last) draft "
              "rejected: the loop runs to the block's end"),
        synth("near-tie", 50, 4, 2, 8, "each row's top two logits differ by 1e-4 at ~10 (the "
              "higher id wins in fp32; bf16 or fp16 would tie them and pick the lower)",
              near=True),
    ]
    for i in range(10):
        k = rng.choice([0, 1, 2, 4, 8])
        out.append(Case(f"L1-hidden-{i}", 1, {"V": rng.choice([2, 16, 50, 1000]), "k": k,
                        "accept": rng.randint(0, k), "seed": rng.randrange(1 << 30),
                        "tie": rng.random() < 0.2}, size=k + 1))
    for i, k in enumerate([0, 1, 2, 4, 8]):
        out.append(Case(f"L1-model-k{k}", 1, {"model": "shipped", "k": k, "prompt": i},
                        size=100 + k, timeout_s=120,
                        description="real logits: the shipped pair's draft proposes"))
    return out


def given(case: Case, ctx: RunContext) -> dict[str, Any] | None:
    """A real-model case's inputs for the child (`RunContext.given`), else None."""
    if case.level != 1 or case.params.get("model") != "shipped":
        return None
    drafts, logits = inputs.l1_inputs(case.params, ctx.device, ctx.model_paths)
    return {"drafts": drafts, "logits": logits}


def expected(case: Case, ctx: RunContext) -> dict[str, Any]:
    drafts, logits = inputs.l1_inputs(case.params, ctx.device, ctx.model_paths)
    out = reference().verify_greedy(list(drafts), logits.clone())
    return {"out": out, "draft": drafts, "argmax": logits.argmax(dim=-1).tolist()}


def check(case: Case, got: Any, expected: Any) -> Verdict:
    out: Any = got.get("out") if isinstance(got, dict) else got
    exp: list[int] = expected["out"]
    drafts, best = expected["draft"], expected["argmax"]
    k = len(drafts)
    if out == exp and is_tokens(out):
        return Verdict(True)
    head = f"draft {drafts}, argmax per row {best}: expected {exp}, got {out!r:.200}"
    if not is_tokens(out):
        return Verdict(False, f"verify_greedy must return list[int]; {head}")
    m = len(exp) - 1  # accepted count
    if out == _variant(drafts, best, shift=1):
        return Verdict(False, f"off-by-one logits row: row i scores the token after the prefix "
                              f"plus draft[:i], so draft[i] is checked against argmax(row i), and "
                              f"the bonus is argmax(row k); {head}")
    if 0 in drafts[: m + 1] and out == _variant(drafts, best, falsy_zero=True):
        return Verdict(False, f"token id 0 is a token like any other (a falsy id: `if token` or "
                              f"`x and ...` skips it); {head}")
    if out == exp[:-1]:
        what = ("the bonus token argmax(row k) after all k matched" if m == k
                else f"the correction argmax(row {m}) after the first mismatch")
        loop = (" - or the accept loop stopped one draft short of the block's end (run it over "
                "all k drafts, however many)" if m == k and k > 1 else "")
        return Verdict(False, f"the last token is missing: {what} (bonus token dropped?{loop}); "
                              f"{head}")
    if len(out) > len(exp) and out[: len(exp)] == exp:
        return Verdict(False, f"emitted tokens past the block's end: stop right after the first "
                              f"target token (correction or bonus); {head}")
    if case.params.get("near"):
        return Verdict(False, f"each row's top two logits differ by 1e-4 here: compare them in "
                              f"the logits' own precision (fp32) — in bf16 or fp16 they tie and "
                              f"the argmax flips to the lower id; {head}")
    if case.params.get("tie"):
        return Verdict(False, f"with tied top logits the argmax is the lowest tied id (what "
                              f"torch.argmax returns, and what the target's greedy decoding "
                              f"emits); {head}")
    i = next((j for j in range(min(len(out), len(exp))) if out[j] != exp[j]),
             min(len(out), len(exp)))
    return Verdict(False, f"first difference at index {i}; {head}")


def _variant(drafts: list[int], best: list[int], shift: int = 0, falsy_zero: bool = False
             ) -> list[int]:
    """What a classic wrong greedy verifier returns (to name the bug in a failure message)."""
    k = len(drafts)
    out: list[int] = []
    for i in range(k):
        row = min(i + shift, k)
        if drafts[i] == best[row] and not (falsy_zero and drafts[i] == 0):
            out.append(drafts[i])
        else:
            return [*out, best[row]]
    return [*out, best[min(k + shift, k)]]
