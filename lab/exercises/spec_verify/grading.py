"""Grading spec for `spec-verify` (see LAB-PROTOCOL.md): cases, how to run them, how to judge.

Levels 1, 4 (greedy) and 5 are exact comparisons with the target's own greedy decoding; levels 2-3
and sampled level 4 are chi-square tests against the exact law of a block, Bonferroni-corrected so
that a correct solution fails a level's grading run with probability at most FAMILY_ALPHA.
Messages name the likely bug: structural violations are checked before any statistics.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections import Counter
from functools import lru_cache
from types import ModuleType
from typing import Any

import torch

from lab.exercises.spec_verify import stats
from lab.exercises.spec_verify.lm import CausalLM, Ledger, Pass
from lab.grader.api import Case, RunContext, Verdict

REFERENCE = "lab.reference.spec_verify"

# A correct sampler fails one level's grading run with probability <= FAMILY_ALPHA: every
# chi-square test runs at FAMILY_ALPHA / (number of tests in the level) (Bonferroni).
FAMILY_ALPHA = 1e-3
# A greedy divergence is excused only where the target's top-2 logits are this close (fp32).
NEAR_TIE = 1e-4
L2_SAMPLES = 10_000
L3_ROWS_PER_CASE = 20_000
L4_LAW_SAMPLES = 1_500

# ---------------------------------------------------------------------------------------------
# Fixed probability tables for levels 2-3 (explicit, so a failing case can be replayed by hand).


def _dirichlet(rng: random.Random, v: int, conc: float, zeros: int = 0) -> list[float]:
    xs = [rng.gammavariate(conc, 1.0) for _ in range(v)]
    for i in rng.sample(range(v), zeros):
        xs[i] = 0.0
    s = sum(xs)
    return [round(x / s, 6) for x in xs]


def _norm(row: list[float]) -> list[float]:
    s = sum(row)
    return [x / s for x in row]


def _law_tables(name: str, seed: int) -> dict[str, Any]:
    """p (k+1 rows) and q (k rows) for one named situation; the drafts are sampled from q."""
    rng = random.Random(f"{name}-{seed}")
    if name == "rejections":  # distinct rows per position, many rejections: the workhorse case
        v, k = 6, 3
        p = [_dirichlet(rng, v, 0.7) for _ in range(k + 1)]
        q = [_dirichlet(rng, v, 0.7) for _ in range(k)]
    elif name == "p_eq_q":  # never rejects, residual all zeros: no NaN, always k + bonus
        v, k = 5, 3
        q = [_dirichlet(rng, v, 1.0) for _ in range(k)]
        p = [*q, _dirichlet(rng, v, 1.0)]
    elif name == "q_zero":  # tokens the draft never proposes: only the residual can emit them
        v, k = 6, 2
        p = [_dirichlet(rng, v, 1.0) for _ in range(k + 1)]
        q = [_dirichlet(rng, v, 1.0, zeros=3) for _ in range(k)]
    elif name == "p_zero":  # drafted tokens the target forbids: always rejected
        v, k = 6, 2
        p = [_dirichlet(rng, v, 1.0, zeros=2) for _ in range(k + 1)]
        q = [_dirichlet(rng, v, 1.0) for _ in range(k)]
    elif name == "k0":
        v, k = 7, 0
        p = [_dirichlet(rng, v, 1.0)]
        q = []
    elif name == "temperature":  # warped (T = 0.6, top-4) target vs a flatter T = 1.5 draft
        v, k = 8, 3
        logits = [[rng.gauss(0, 1.5) for _ in range(v)] for _ in range(k + 1)]

        def warp(row: list[float], t: float, top: int) -> list[float]:
            keep = sorted(range(v), key=lambda i: -row[i])[:top]
            ex = [math.exp(row[i] / t) if i in keep else 0.0 for i in range(v)]
            return [round(x, 6) for x in _norm(ex)]

        p = [warp(r, 0.6, 4) for r in logits]
        q = [warp(r, 1.5, 6) for r in logits[:k]]
    elif name == "hidden":  # different every grading run unless --seed is given
        v, k = rng.randint(3, 8), rng.randint(1, 3)
        conc = rng.choice([0.3, 0.7, 2.0])
        p = [_dirichlet(rng, v, conc) for _ in range(k + 1)]
        q = [_dirichlet(rng, v, conc) for _ in range(k)]
    else:
        raise ValueError(f"unknown table {name!r}")
    return {"V": v, "k": k, "p": p, "q": q}


def _tests_in(params: dict[str, Any]) -> int:
    """Chi-square tests on one law case: joint, accepted count, first token, k residuals, bonus."""
    return 4 + int(params["k"])


L2_TABLES: list[tuple[str, str]] = [
    ("rejections", "distinct p_i, q_i per position with frequent rejections"),
    ("p_eq_q", "p == q: nothing is rejected and the residual is all zeros (no NaN)"),
    ("q_zero", "q(y) = 0 where p(y) > 0: only the residual can emit y"),
    ("p_zero", "p(x) = 0 for drafted tokens: they must always be rejected"),
    ("k0", "k = 0: the block is one bonus token from p_1"),
    ("temperature", "target at T = 0.6 with top-4, draft at T = 1.5 with top-6"),
]

# ---------------------------------------------------------------------------------------------
# Cases


def cases(level: int, seed: int) -> list[Case]:
    """Fixed edge cases + hidden cases generated from `seed`."""
    if level == 1:
        return _cases_l1(seed)
    if level == 2:
        return _cases_l2(seed)
    if level == 3:
        return _cases_l3(seed)
    if level == 4:
        return _cases_l4(seed)
    if level == 5:
        return _cases_l5(seed)
    raise ValueError(f"spec-verify has levels 1-5, not {level}")


def _cases_l1(seed: int) -> list[Case]:
    rng = random.Random(seed)
    out = [
        Case("L1-k0", 1, {"V": 50, "k": 0, "accept": 0, "seed": 1}, size=1,
             description="k = 0: emit argmax(row 0) only"),
        Case("L1-all-accepted", 1, {"V": 50, "k": 4, "accept": 4, "seed": 2}, size=5,
             description="every drafted token matches: emit them all plus the bonus argmax(row k)"),
        Case("L1-first-rejected", 1, {"V": 50, "k": 4, "accept": 0, "seed": 3}, size=5,
             description="the first drafted token mismatches, later ones would match"),
        Case("L1-mid-reject", 1, {"V": 1000, "k": 8, "accept": 3, "seed": 4}, size=9,
             description="three accepted, then a correction; drafts after it match their rows"),
        Case("L1-all-accepted-k8", 1, {"V": 1000, "k": 8, "accept": 8, "seed": 5}, size=9),
        Case("L1-one-token-vocab", 1, {"V": 1, "k": 2, "accept": 2, "seed": 6}, size=3,
             description="V = 1: everything matches"),
    ]
    for i in range(10):
        k = rng.choice([0, 1, 2, 4, 8])
        out.append(Case(f"L1-hidden-{i}", 1, {"V": rng.choice([16, 50, 1000]), "k": k,
                        "accept": rng.randint(0, k), "seed": rng.randrange(1 << 30)}, size=k + 1))
    for i, k in enumerate([0, 1, 2, 4, 8]):
        out.append(Case(f"L1-model-k{k}", 1, {"model": "shipped", "k": k, "prompt": i}, size=k + 1,
                        timeout_s=120,
                        description="real logits: the shipped pair's draft proposes"))
    return out


def _cases_l2(seed: int) -> list[Case]:
    law_params = [(n, d, _law_tables(n, 0)) for n, d in L2_TABLES]
    law_params += [(f"hidden-{i}", "hidden random tables", _law_tables("hidden", seed * 10 + i))
                   for i in range(2)]
    total_tests = sum(_tests_in(p) for _, _, p in law_params)
    alpha = stats.bonferroni_alpha(FAMILY_ALPHA, total_tests)
    out = [
        Case("L2-reproducible", 2, {"kind": "repro", **_law_tables("rejections", 1)}, size=1,
             description="same generator seed -> same output; torch's global RNG untouched"),
    ]
    for name, desc, p in law_params:
        out.append(Case(f"L2-law-{name}", 2, {"kind": "law", "samples": L2_SAMPLES, "alpha": alpha,
                                              "seed": seed % 100_000, **p},
                        size=10 + p["k"], timeout_s=120, description=desc))
    return out


def _cases_l3(seed: int) -> list[Case]:
    names = ["rejections", "p_eq_q", "q_zero", "p_zero", "temperature"]
    rows: list[dict[str, Any]] = [_law_tables(n, 0) for n in names]
    rows.append(_law_tables("hidden", seed * 10 + 7))
    k0 = _law_tables("k0", 0)
    alpha = stats.bonferroni_alpha(FAMILY_ALPHA, sum(_tests_in(_pad(r, 3, 8)) for r in rows) + 4)
    return [
        Case("L3-reproducible", 3, {"kind": "repro_batch", "rows": [_pad(r, 3, 8) for r in rows]},
             size=1, description="same generator seed -> same output; global RNG untouched"),
        Case("L3-k0", 3, {"kind": "law_batch", "rows": [k0], "per_row": L3_ROWS_PER_CASE,
                          "alpha": alpha, "seed": seed % 100_000}, size=2, timeout_s=60,
             description="k = 0 for every row: a bonus token each"),
        Case("L3-mixed-rows", 3, {"kind": "law_batch", "rows": [_pad(r, 3, 8) for r in rows],
                                  "per_row": L3_ROWS_PER_CASE, "alpha": alpha,
                                  "seed": seed % 100_000}, size=3, timeout_s=120,
             description="rows with different p, q interleaved: they accept different lengths; "
                         "each row's law must equal its solo law"),
        Case("L3-large-vocab", 3, {"kind": "large", "B": 64, "k": 2, "V": 32_000,
                                   "seed": seed % 100_000}, size=4, timeout_s=60, timed=True,
             description="V = 32000: no Python loop over the vocabulary (timed vs the reference; "
                         "the level's gate: median time <= 15x the reference's)"),
    ]


def _pad(t: dict[str, Any], k: int, v: int) -> dict[str, Any]:
    """Embed a smaller table in [k, v]: extra tokens get probability 0, extra positions p == q.

    Positions beyond the table's own k copy an all-accepting p == q row so every row of a batch
    has the same k while still accepting different lengths.
    """
    p = [row + [0.0] * (v - len(row)) for row in t["p"]]
    q = [row + [0.0] * (v - len(row)) for row in t["q"]]
    while len(q) < k:
        q.append(p[len(q)])
        p.append(p[-1])
    return {"V": v, "k": k, "p": p, "q": q}


def _cases_l4(seed: int) -> list[Case]:
    rng = random.Random(seed)
    out: list[Case] = []
    # greedy on tiny random pairs (exact, fast) -------------------------------------------
    fixed = [
        ("k0", {"k": 0, "max_new_tokens": 12}),
        ("k1", {"k": 1, "max_new_tokens": 20}),
        ("k2-budget-mid-block", {"k": 2, "max_new_tokens": 13}),
        ("k4", {"k": 4, "max_new_tokens": 31}),
        ("k8-budget-mid-block", {"k": 8, "max_new_tokens": 21}),
        ("eos-in-draft", {"k": 4, "max_new_tokens": 40, "eos_at": 9}),
        ("eos-first-token", {"k": 4, "max_new_tokens": 10, "eos_at": 0}),
        ("budget-one", {"k": 4, "max_new_tokens": 1}),
        ("long-prompt", {"k": 2, "max_new_tokens": 16, "prompt_len": 40}),
    ]
    for name, p in fixed:
        out.append(Case(f"L4-greedy-{name}", 4, {"kind": "greedy", "model": "tiny", "pair_seed": 0,
                                                  "prompt_seed": 1, **p},
                        size=int(p["max_new_tokens"]), timeout_s=60))
    for i in range(4):
        out.append(Case(f"L4-greedy-hidden-{i}", 4, {
            "kind": "greedy", "model": "tiny", "pair_seed": rng.randrange(1 << 20),
            "prompt_seed": rng.randrange(1 << 20), "k": rng.choice([0, 1, 2, 4, 8]),
            "max_new_tokens": rng.randint(5, 40),
            "eos_at": rng.choice([None, rng.randint(0, 20)])}, size=20, timeout_s=60))
    # greedy on the shipped pair ------------------------------------------------------------
    for i, k in enumerate([0, 1, 2, 4, 8]):
        out.append(Case(f"L4-shipped-k{k}", 4, {"kind": "greedy", "model": "shipped", "prompt": i,
                                                 "k": k, "max_new_tokens": 23 + i},
                        size=100 + k, timeout_s=300))
    out.append(Case("L4-shipped-hidden", 4, {
        "kind": "greedy", "model": "shipped", "prompt": rng.randrange(len(SHIPPED_PROMPTS)),
        "k": rng.choice([1, 2, 4, 8]), "max_new_tokens": rng.randint(8, 40),
        "eos_at": rng.choice([None, rng.randint(2, 12)])}, size=120, timeout_s=300))
    out.append(Case("L4-shipped-eos", 4, {"kind": "greedy", "model": "shipped", "prompt": 1,
                                          "k": 4, "max_new_tokens": 40, "eos_at": 11},
                    size=140, timeout_s=300))
    out.append(Case("L4-shipped-metrics", 4, {"kind": "greedy", "model": "shipped", "prompt": 2,
                                              "k": 4, "max_new_tokens": 64, "measure": True},
                    size=200, timeout_s=600, report=True,
                    description="α̂, τ vs (1 − α^(k+1))/(1 − α), passes per token, speed vs plain "
                                "greedy of the same target (interleaved, medians)"))
    out.append(Case("L4-shipped-timed", 4, {"kind": "timed", "model": "shipped", "prompt": 3,
                                            "k": 4, "max_new_tokens": 48},
                    size=150, timeout_s=300, timed=True,
                    description="wall clock of your loop vs the reference loop"))
    # sampling ----------------------------------------------------------------------------
    out.append(Case("L4-sampled-reproducible", 4, {"kind": "repro", "model": "tiny", "pair_seed": 1,
                                                    "prompt_seed": 2, "k": 3, "max_new_tokens": 12,
                                                    "temperature": 0.8}, size=50, timeout_s=60))
    out.append(Case("L4-sampled-eos-budget", 4, {"kind": "sampled_structure", "model": "tiny",
                                                  "pair_seed": 1, "prompt_seed": 3, "k": 4,
                                                  "max_new_tokens": 9, "temperature": 1.0,
                                                  "runs": 40, "seed": seed % 100_000},
                    size=60, timeout_s=60,
                    description="sampled runs stop exactly at EOS or the budget"))
    # (T, k, tokens): with 2 tokens a loop that clips its drafts to the budget drafts 1, so the
    # 3-token case is the one where a block really drafts 2 (q rows must line up with drafts)
    law_cases = [(1.0, 1, 2), (0.6, 2, 2), (1.0, 2, 3)]
    for t, k, n in law_cases:
        name = f"L4-sampled-law-T{t}" + (f"-{n}tok-k{k}" if n != 2 else "")
        out.append(Case(name, 4, {
            "kind": "law", "model": "law", "k": k, "max_new_tokens": n, "temperature": t,
            "samples": L4_LAW_SAMPLES, "alpha": FAMILY_ALPHA / len(law_cases),
            "seed": seed % 100_000}, size=300, timeout_s=240,
            description=f"the first {n} tokens follow the target's own sampling law at "
                        f"temperature T (k = {k})"))
    return out


def _random_parents(rng: random.Random, n: int) -> list[int]:
    return [-1] + [rng.randrange(i) for i in range(1, n)]


def _cases_l5(seed: int) -> list[Case]:
    rng = random.Random(seed)
    out = [
        Case("L5-mask-root-only", 5, {"kind": "mask", "parents": [-1]}, size=1),
        Case("L5-mask-chain", 5, {"kind": "mask", "parents": [-1, 0, 1, 2, 3]}, size=5,
             description="a chain: the tree mask is the causal mask"),
        Case("L5-mask-star", 5, {"kind": "mask", "parents": [-1, 0, 0, 0, 0]}, size=5,
             description="siblings must not see each other"),
        Case("L5-mask-two-branches", 5, {"kind": "mask", "parents": [-1, 0, 1, 2, 0, 4, 5]},
             size=7, description="a later branch must not see the earlier one"),
    ]
    for i in range(4):
        n = rng.randint(2, 16)
        out.append(Case(f"L5-mask-hidden-{i}", 5, {"kind": "mask",
                                                    "parents": _random_parents(rng, n)}, size=n))
    fixed = [
        ("root-only", [-1], 0),
        ("all-accepted-chain", [-1, 0, 1, 2], 3),
        ("second-sibling", [-1, 0, 0, 1, 2], 2),
        ("duplicate-siblings", [-1, 0, 0, 1, 2], 1),
        ("first-rejected", [-1, 0, 0, 0], 0),
    ]
    for name, par, depth in fixed:
        out.append(Case(f"L5-verify-{name}", 5, {"kind": "verify", "parents": par, "accept": depth,
                                                 "seed": len(out), "dup": name.startswith("dup"),
                                                 "branch": 1 if "second" in name else 0},
                        size=len(par)))
    for i in range(4):
        n = rng.randint(2, 14)
        out.append(Case(f"L5-verify-hidden-{i}", 5, {
            "kind": "verify", "parents": _random_parents(rng, n), "accept": rng.randint(0, 4),
            "seed": rng.randrange(1 << 30), "dup": rng.random() < 0.3,
            "branch": rng.randint(0, 2)}, size=n))
    for name, p in [("tiny-w2-d3", {"model": "tiny", "pair_seed": 0, "prompt_seed": 1,
                                    "width": 2, "depth": 3, "max_new_tokens": 24}),
                    ("tiny-w3-d4-budget", {"model": "tiny", "pair_seed": 2, "prompt_seed": 4,
                                           "width": 3, "depth": 4, "max_new_tokens": 19}),
                    ("shipped-w3-d4", {"model": "shipped", "prompt": 0, "width": 3, "depth": 4,
                                       "max_new_tokens": 32})]:
        out.append(Case(f"L5-generate-{name}", 5, {"kind": "tree_generate", **p}, size=100,
                        timeout_s=300,
                        description="the grader's tree loop with your mask and verifier: output "
                                    "== the target's greedy decoding; accepted per pass >= the "
                                    "best branch's alone (>= the k = depth chain's)"))
    return out


# ---------------------------------------------------------------------------------------------
# Models


@lru_cache(maxsize=8)
def _tiny_pair(seed: int, vocab: int, hidden: int, layers: int, noise: float) -> tuple[Any, Any]:
    """A random target and a draft = target + noise (agrees often, not always); fp32, CPU.

    Built under a forked RNG so the grader never disturbs torch's global random state.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, initializer_range=0.2, tie_word_embeddings=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        target = LlamaForCausalLM(cfg).train(False)
        draft = LlamaForCausalLM(cfg).train(False)
        draft.load_state_dict(target.state_dict())
        with torch.no_grad():
            for prm in draft.parameters():
                prm.add_(noise * torch.randn_like(prm))
    return target, draft


@lru_cache(maxsize=2)
def _shipped(device: str, target: str | None = None, draft: str | None = None
             ) -> tuple[Any, Any, Any]:
    """The shipped pair in fp32 (greedy equality is graded in fp32), or the learner's own
    checkpoints from `dojo lab grade --target PATH --draft PATH`."""
    try:
        from lab.models import load_pair
    except ImportError as exc:
        raise RuntimeError("the shipped draft/target pair (lab.models) is not installed") from exc
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # a clean report
    pair = load_pair(target=target, draft=draft, device=device, dtype="float32")
    return pair.target, pair.draft, pair.tokenizer


SHIPPED_PROMPTS = [  # the shipped pair was trained on Python source
    "import os\nimport sys\n\n\ndef main(argv):\n    ",
    "class Queue:\n    def __init__(self, maxsize=0):\n        self.maxsize = maxsize\n",
    "def _read_config(path):\n    \"\"\"Read the configuration file.\"\"\"\n    with open(",
    "    for i in range(len(items)):\n        if items[i] is None:\n            ",
    "try:\n    import threading\nexcept ImportError:\n",
]


def _models(params: dict[str, Any], device: str, paths: dict[str, str] | None = None
            ) -> tuple[CausalLM, CausalLM, list[int]]:
    which = params["model"]
    if which == "shipped":
        paths = paths or {}
        target, draft, tok = _shipped(device, paths.get("target"), paths.get("draft"))
        prompt = [int(t) for t in tok.encode(SHIPPED_PROMPTS[params["prompt"]])]
    elif which == "law":  # V = 8 so the law of 3 tokens has 512 outcomes
        target, draft = _tiny_pair(3, 8, 32, 1, 0.3)
        prompt = [5]
    else:
        target, draft = _tiny_pair(int(params["pair_seed"]), 64, 64, 2, 0.01)
        prng = random.Random(params.get("prompt_seed", 0))
        prompt = [prng.randrange(64) for _ in range(int(params.get("prompt_len", 5)))]
    ledger = Ledger()  # the grader's record of both models' passes; reset() cannot clear it
    return (CausalLM(target, name="target", ledger=ledger),
            CausalLM(draft, name="draft", ledger=ledger), prompt)


def _greedy_with_gaps(lm: CausalLM, prompt: list[int], n: int) -> tuple[list[int], list[float],
                                                                         list[int]]:
    """Plain greedy decoding of the target plus, per position, the top-2 logit gap and runner-up."""
    lm.reset()
    toks: list[int] = []
    gaps: list[float] = []
    second: list[int] = []
    logits = lm.forward(prompt)[-1]
    for _ in range(n):
        top = torch.topk(logits, min(2, logits.shape[-1]))
        toks.append(int(top.indices[0]))
        gaps.append(float(top.values[0] - top.values[-1]) if logits.shape[-1] > 1 else math.inf)
        second.append(int(top.indices[-1]))
        if len(toks) == n:
            break
        logits = lm.forward([toks[-1]])[-1]
    lm.reset()
    return toks, gaps, second


# ---------------------------------------------------------------------------------------------
# Run


def run(solution: ModuleType, case: Case, ctx: RunContext) -> object:
    """Execute one case; return plain data (lists, dicts, floats)."""
    if ctx.device == "cpu":
        torch.set_num_threads(1)
    p = case.params
    if case.level == 1:
        return _run_l1(solution, p, ctx)
    if case.level == 2:
        return _run_l2(solution, p)
    if case.level == 3:
        return _run_l3(solution, p)
    if case.level == 4:
        return _run_l4(solution, p, ctx)
    if case.level == 5:
        return _run_l5(solution, p, ctx)
    raise ValueError(f"no level {case.level}")


def _is_reference(solution: ModuleType) -> bool:
    # The sampling levels are judged against the exact law, not against the reference's samples,
    # so the grader skips drawing them for the reference (tests grade it like a learner file).
    return getattr(solution, "__name__", "") == REFERENCE


def _l1_inputs(p: dict[str, Any], ctx: RunContext) -> tuple[list[int], torch.Tensor]:
    if p.get("model") == "shipped":
        t_lm, d_lm, prompt = _models({"model": "shipped", "prompt": p["prompt"]}, ctx.device,
                                       ctx.model_paths)
        drafts: list[int] = []
        logits = d_lm.forward(prompt)[-1]
        for _ in range(int(p["k"])):
            drafts.append(int(logits.argmax()))
            logits = d_lm.forward([drafts[-1]])[-1]
        rows = t_lm.forward(prompt + drafts)[len(prompt) - 1:]
        return drafts, rows.float().cpu()
    g = torch.Generator().manual_seed(int(p["seed"]))
    v, k, m = int(p["V"]), int(p["k"]), int(p["accept"])
    logits = torch.randn(k + 1, v, generator=g) * 3
    best = logits.argmax(dim=-1).tolist()
    drafts = []
    for i in range(k):
        if i == m and v > 1:
            other = int(torch.randint(0, v - 1, (1,), generator=g))
            drafts.append(other if other < best[i] else other + 1)  # anything but the argmax
        else:
            drafts.append(best[i])  # accepted prefix, and after a mismatch: tempting matches
    return drafts, logits


def _run_l1(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> object:
    drafts, logits = _l1_inputs(p, ctx)
    out = solution.verify_greedy(list(drafts), logits.clone())
    return {"out": _plain(out), "draft": drafts, "argmax": logits.argmax(dim=-1).tolist()}


def _plain(x: Any) -> Any:
    """Tensors and nested lists to plain Python (the observation must pickle cleanly)."""
    if isinstance(x, torch.Tensor):
        return x.tolist()
    if isinstance(x, (list, tuple)):
        return [_plain(y) for y in x]
    return x


def _tensors(p: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    v, k = int(p["V"]), int(p["k"])
    tp = torch.tensor(p["p"], dtype=torch.float64)
    tp = (tp / tp.sum(-1, keepdim=True)).float()
    tq = torch.tensor(p["q"], dtype=torch.float64).reshape(k, v)
    tq = (tq / tq.sum(-1, keepdim=True).clamp_min(1e-300)).float()
    return tp, tq


def _as_tables(p: dict[str, Any]) -> tuple[list[list[float]], list[list[float]]]:
    tp, tq = _tensors(p)  # the fp32 values the solution sees, renormalised exactly in fp64
    tp64, tq64 = tp.double(), tq.double()
    tp64 = tp64 / tp64.sum(-1, keepdim=True)
    tq64 = tq64 / tq64.sum(-1, keepdim=True).clamp_min(1e-300)
    return tp64.tolist(), tq64.tolist()


def _draws(tq: torch.Tensor, n: int, seed: int) -> torch.Tensor:
    """n drafted blocks [n, k], each token sampled from its q_i (the grader's own generator)."""
    k = tq.shape[0]
    if k == 0:
        return torch.zeros(n, 0, dtype=torch.long)
    g = torch.Generator().manual_seed(seed + 7919)
    return torch.stack([torch.multinomial(tq[i], n, replacement=True, generator=g)
                        for i in range(k)], dim=1)


NO_BONUS = "the block is exactly the k drafted tokens with no target token after them"


def _structure(out: Any, draft: list[int], tp: list[list[float]], tq: list[list[float]]) -> str:
    """'' when a block is well formed, else what is wrong with it (checked before statistics)."""
    k, v = len(draft), len(tp[0])
    if not isinstance(out, list) or not all(isinstance(t, int) and not isinstance(t, bool)
                                            for t in out):
        return f"must return list[int], got {out!r:.80}"
    if not out:
        return ("returned an empty block: a block always emits at least one token"
                + (" (k = 0: the bonus token from p_1)" if k == 0 else ""))
    bad = [t for t in out if not 0 <= t < v]
    if bad:
        return f"token id {bad[0]} is outside the vocabulary [0, {v})"
    m = 0
    while m < min(k, len(out)) and out[m] == draft[m]:
        m += 1
    for i in range(m):
        if tp[i][draft[i]] <= 0:
            return (f"accepted drafted token {draft[i]} at position {i} although the target gives "
                    f"it p = 0 (accept with probability min(1, p/q))")
    if m == len(out):
        x = draft[m - 1]
        if m == k:  # ambiguous alone; check() decides from the other blocks (see NO_BONUS)
            return NO_BONUS
        if tp[m - 1][x] >= tq[m - 1][x]:
            return (f"drafted token {x} at position {m - 1} has p = {tp[m - 1][x]:.3f} >= q = "
                    f"{tq[m - 1][x]:.3f}, so min(1, p/q) = 1 and it must be accepted; the block "
                    f"ended on it with no correction after it (p or q read at the wrong "
                    f"position?)")
        return (f"the rejected drafted token {x} at position {m - 1} was emitted as its own "
                f"correction, but norm(max(0, p - q)) is 0 there (p = {tp[m - 1][x]:.3f} < q = "
                f"{tq[m - 1][x]:.3f}); after a rejection sample from the residual")
    if len(out) > m + 1:
        extra = len(out) - m - 1
        where = "the bonus token" if m == k else f"the correction at position {m}"
        return (f"emitted {extra} token(s) after {where} (block {out}, draft {draft}): a block "
                f"stops at its first rejection and ends with exactly one target token"
                + (" (is a bonus token sampled even after a rejection?)" if m < k else ""))
    z = out[m]
    if m < k and not tp[m][z] > tq[m][z]:
        return (f"after rejecting position {m} the block emitted {z}, which has p = {tp[m][z]:.3f}"
                f" <= q = {tq[m][z]:.3f}: the correction must come from norm(max(0, p - q)) "
                f"(resampling from p instead of the residual?)")
    if m == k and tp[k][z] <= 0:
        return f"the bonus token {z} has p_{{k+1}} = 0: sample it from the last row of target_probs"
    return ""


def _global_rng_probe(fn: Any) -> tuple[Any, Any, bool]:
    """Call fn(generator) twice with the same generator seed but different global seeds."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1234)
        before = torch.get_rng_state()
        a = fn(torch.Generator().manual_seed(99))
        touched = not torch.equal(before, torch.get_rng_state())
        torch.manual_seed(4321)
        b = fn(torch.Generator().manual_seed(99))
    return a, b, touched


def _run_l2(solution: ModuleType, p: dict[str, Any]) -> object:
    tp, tq = _tensors(p)
    tpl, tql = _as_tables(p)
    k = int(p["k"])
    if p["kind"] == "repro":
        drafts = _draws(tq, 200, 5).tolist()

        def many(g: torch.Generator) -> list[Any]:
            return [_plain(solution.verify_sampling(list(d), tq.clone(), tp.clone(), g))
                    for d in drafts]

        a, b, touched = _global_rng_probe(many)
        return {"same": a == b, "touched": touched, "first": [a[:3], b[:3]]}
    if _is_reference(solution):
        return {"reference": True}
    n = int(p["samples"])
    drafts = _draws(tq, n, int(p["seed"])).tolist()
    g = torch.Generator().manual_seed(int(p["seed"]))
    counts: Counter[tuple[int, ...]] = Counter()
    violations: list[str] = []
    nbad = 0
    for d in drafts:
        out = _plain(solution.verify_sampling(list(d), tq.clone(), tp.clone(), g))
        msg = _structure(out, d, tpl, tql)
        if msg:
            nbad += 1
            if len(violations) < 3:
                violations.append(f"draft {d}: {msg}")
            if nbad >= 50:
                break
            continue
        counts[tuple(out)] += 1
    return {"counts": dict(counts), "violations": violations, "n_violations": nbad, "k": k}


def _batch_inputs(rows: list[dict[str, Any]], per_row: int, seed: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
    """Interleave the row tables (row b uses table b % R) so neighbours accept different lengths."""
    r = len(rows)
    ps, qs, xs = [], [], []
    for j, t in enumerate(rows):
        tp, tq = _tensors(t)
        ps.append(tp)
        qs.append(tq)
        xs.append(_draws(tq, per_row, seed + 1000 * j))
    b = per_row * r
    which = [i % r for i in range(b)]
    idx = torch.tensor(which)
    pos = torch.arange(b) // r
    tp_all = torch.stack(ps)[idx]
    tq_all = torch.stack(qs)[idx]
    x_all = torch.stack(xs)[idx, pos]
    return x_all, tq_all, tp_all, which


@lru_cache(maxsize=2)
def _large_inputs(seed: int, b: int, k: int, v: int
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The large-vocabulary batch, built once per process so timing measures the verifier, not
    the making of 10^7 random probabilities."""
    g = torch.Generator().manual_seed(seed)
    tp = torch.softmax(torch.randn(b, k + 1, v, generator=g) * 4, -1)
    tq = torch.softmax(torch.randn(b, k, v, generator=g) * 4, -1)
    x = torch.stack([torch.multinomial(tq[:, i], 1, generator=g).squeeze(1) for i in range(k)],
                    dim=1)
    return x, tq, tp


def _run_l3(solution: ModuleType, p: dict[str, Any]) -> object:
    if p["kind"] == "large":
        b, k, v = int(p["B"]), int(p["k"]), int(p["V"])
        x, tq, tp = _large_inputs(int(p["seed"]), b, k, v)
        g = torch.Generator().manual_seed(int(p["seed"]) + 1)
        # tq, tp are shared by every run in this process (not copied: 10^7 floats of copying
        # would dominate the timing); the checked run is the first one, so it sees them intact
        out = _plain(solution.verify_batch(x.clone(), tq, tp, g))
        return {"kind": "large", "out": out, "draft": x.tolist(), "V": v, "k": k, "B": b}
    if p["kind"] == "repro_batch":
        x, tq, tp, _ = _batch_inputs(p["rows"], 50, 3)

        def once(g: torch.Generator) -> Any:
            return _plain(solution.verify_batch(x.clone(), tq.clone(), tp.clone(), g))

        a, b2, touched = _global_rng_probe(once)
        return {"same": a == b2, "touched": touched, "first": [a[:3], b2[:3]]}
    if _is_reference(solution):
        return {"reference": True}
    x, tq, tp, which = _batch_inputs(p["rows"], int(p["per_row"]), int(p["seed"]))
    g = torch.Generator().manual_seed(int(p["seed"]))
    out = _plain(solution.verify_batch(x.clone(), tq.clone(), tp.clone(), g))
    if not isinstance(out, list) or len(out) != x.shape[0]:
        length = len(out) if isinstance(out, list) else "?"
        return {"error": f"verify_batch must return a list of B = {x.shape[0]} lists, got "
                         f"{type(out).__name__} of length {length}"}
    tables = [_as_tables(t) for t in p["rows"]]
    counts: list[Counter[tuple[int, ...]]] = [Counter() for _ in p["rows"]]
    violations: list[str] = []
    nbad = 0
    drafts = x.tolist()
    for bi, (row, d, j) in enumerate(zip(out, drafts, which, strict=True)):
        msg = _structure(row, d, *tables[j])
        if msg:
            msg += (" [in a batch each row stops at its own first rejection: a cumulative "
                    "product of the accept mask along k, per row]")
            nbad += 1
            if len(violations) < 3:
                violations.append(f"row {bi} (table {j}), draft {d}: {msg}")
            continue
        counts[j][tuple(row)] += 1
    return {"counts": [dict(c) for c in counts], "violations": violations, "n_violations": nbad}


def _pick_eos(plain: list[int], at: int) -> int:
    """An EOS id that first appears in the target's greedy output at index >= `at` if possible."""
    at = min(at, len(plain) - 1)
    for tok in plain[at:]:
        if tok not in plain[:at]:
            return tok
    return plain[at]


def _run_l4(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> object:
    kind = p["kind"]
    device = ctx.device if p["model"] == "shipped" else "cpu"
    target, draft, prompt = _models(p, device, ctx.model_paths)
    k, budget = int(p["k"]), int(p["max_new_tokens"])
    temp = float(p.get("temperature", 0.0))
    if kind == "greedy":
        plain, gaps, second = _greedy_with_gaps(target, prompt, budget)
        eos = _pick_eos(plain, int(p["eos_at"])) if p.get("eos_at") is not None else None
        target.reset()
        draft.reset()
        ledger = target.ledger
        assert ledger is not None
        ledger.clear()
        t0 = time.perf_counter()
        out = _plain(solution.speculative_generate(target, draft, list(prompt), budget, k,
                                                   temperature=0.0, generator=None,
                                                   eos_token_id=eos))
        wall = time.perf_counter() - t0
        obs: dict[str, Any] = {"out": out, "plain": plain, "gaps": gaps, "second": second,
                               "eos": eos, "prompt_len": len(prompt), "k": k, "budget": budget,
                               "wall_s": wall,
                               **_trace_report(ledger, prompt, out, k)}
        if p.get("measure"):
            obs.update(_measure(solution, target, draft, prompt, budget, k))
        return obs
    if kind == "timed":  # only the loop itself, so the platform times just that
        return {"out": _plain(solution.speculative_generate(target, draft, list(prompt), budget,
                                                            k))}
    if kind == "repro":
        def once(g: torch.Generator) -> Any:
            return _plain(solution.speculative_generate(target, draft, list(prompt), budget, k,
                                                        temperature=temp, generator=g))

        a, b, touched = _global_rng_probe(once)
        return {"same": a == b, "touched": touched, "first": [a, b]}
    if kind == "sampled_structure":
        plain, _, _ = _greedy_with_gaps(target, prompt, 6)
        eos = plain[3]
        g = torch.Generator().manual_seed(int(p["seed"]))
        outs = []
        for _ in range(int(p["runs"])):
            outs.append(_plain(solution.speculative_generate(
                target, draft, list(prompt), budget, k, temperature=temp, generator=g,
                eos_token_id=eos)))
        return {"outs": outs, "eos": eos, "budget": budget, "V": target.vocab_size}
    if kind == "law":
        law = _target_law(target, prompt, budget, temp)
        if _is_reference(solution):
            return {"law": law}
        g = torch.Generator().manual_seed(int(p["seed"]))
        counts: Counter[tuple[int, ...]] = Counter()
        bad: list[Any] = []
        for _ in range(int(p["samples"])):
            out = _plain(solution.speculative_generate(target, draft, list(prompt), budget, k,
                                                       temperature=temp, generator=g))
            if not isinstance(out, list) or len(out) != budget:
                bad.append(out)
                break
            counts[tuple(out)] += 1
        return {"counts": dict(counts), "bad": bad, "law": law}
    raise ValueError(f"unknown level-4 case kind {kind!r}")


def _target_law(lm: CausalLM, prompt: list[int], length: int, temp: float
                ) -> dict[tuple[int, ...], float]:
    """Exact law of the target's first `length` sampled tokens (V^length outcomes, small V)."""
    v = lm.vocab_size
    steps: dict[tuple[int, ...], list[float]] = {}
    for n in range(length):
        for prefix in itertools.product(range(v), repeat=n):
            lm.reset()
            logits = lm.forward(prompt + list(prefix))[-1].double()
            steps[prefix] = torch.softmax(logits / temp, -1).tolist()
    lm.reset()
    return stats.sequences_law(steps, length)


def _trace_report(ledger: Ledger, prompt: list[int], out: Any, k: int) -> dict[str, Any]:
    """Stale-cache, recompute and pass-count diagnosis, and acceptance figures, from the
    grader's ledger of the passes each model ran (the learner's reset() cannot clear it)."""
    seq = list(prompt) + (list(out) if isinstance(out, list) else [])
    t_passes, d_passes = ledger.passes("target"), ledger.passes("draft")
    rep: dict[str, Any] = {"target_passes": len(t_passes), "draft_passes": len(d_passes),
                           "target_fault": "", "draft_fault": "", "pass_fault": ""}
    for i, ps in enumerate(t_passes):
        bad = _first_mismatch(ps.context[: ps.cached], seq)
        if bad is not None:
            rep["target_fault"] = (
                f"target pass #{i + 1} ran with token {ps.context[bad]} at position {bad} still "
                f"in its KV cache, but the output has "
                f"{seq[bad] if bad < len(seq) else 'nothing'} there: rejected drafted tokens were "
                f"left in the cache (cache not cropped) - crop the target's cache to the accepted "
                f"length after each block")
            break
    for i, ps in enumerate(d_passes):
        bad = _first_mismatch(ps.context, seq)
        start = min(len(seq), len(ps.context)) if bad is None else bad
        if len(ps.context) - start > k + 1:
            rep["draft_fault"] = (
                f"draft pass #{i + 1} ran on {len(ps.context) - start} tokens that are not the "
                f"output (the draft's context departs from it at position {start}: it has "
                f"{ps.context[start]}, the output {seq[start] if start < len(seq) else 'nothing'})"
                f" - the draft must be cropped after each block and fed the correction/bonus "
                f"token (and any accepted token it has not processed) before drafting again")
            break
    rep["pass_fault"] = _recompute_fault(ledger) or _passes_per_block_fault(ledger, k)
    verify = _verify_passes(t_passes, len(prompt))
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


def _recompute_fault(ledger: Ledger) -> str:
    """A pass that re-runs tokens the model's cache already held (reset() or crop() back, then
    the sequence again): no KV-cache reuse. For the target, a pass whose first new token sits
    where the previous pass had already cached that same token after the same prefix (a new
    block starts at the correction, which differs from the rejected draft it replaces); for the
    draft, any pass from an empty cache after its first."""
    for name in ("target", "draft"):
        prev: tuple[int, Pass] | None = None
        reset = False
        num = 0
        for who, ps in ledger.entries:
            if who != name:
                continue
            if ps is None:
                reset = prev is not None
                continue
            num += 1
            if prev is not None:
                pnum, pp = prev
                c = ps.cached
                if name == "target":
                    again = (c < len(pp.context) and ps.context[: c + 1] == pp.context[: c + 1])
                else:
                    again = c == 0
                if again:
                    why = (f"{name}.reset() was called in between" if reset else
                           f"its cache was cropped back to {c} tokens")
                    return (f"{name} pass #{num} re-ran token {ps.context[c]} at position {c}, "
                            f"which pass #{pnum} had already put in its KV cache after the same "
                            f"prefix ({why}): it recomputes the cached prefix instead of reusing "
                            f"the KV cache - keep the cache across blocks, crop it to the "
                            f"accepted length and feed only the tokens it has not seen")
            prev, reset = (num, ps), False
    return ""


def _passes_per_block_fault(ledger: Ledger, k: int) -> str:
    """With k > 0 every block drafts before its one target pass, so two target passes with no
    draft pass between them split one block's verification (only the very last may not draft:
    the budget's final token needs no draft)."""
    if k <= 0:
        return ""
    order = [(who, ps) for who, ps in ledger.entries if ps is not None]
    t_idx = [i for i, (who, _) in enumerate(order) if who == "target"]
    for a, b in itertools.pairwise(t_idx[:-1]):  # the last pass is exempt
        if not any(who == "draft" for who, _ in order[a + 1 : b]):
            na, nb = t_idx.index(a) + 1, t_idx.index(b) + 1
            return (f"target passes #{na} and #{nb} ran one after the other with no draft pass "
                    f"between them (more than one target pass per block): score "
                    f"[last committed token, x_1..x_k] in ONE target forward per block")
    return ""


def _verify_passes(trace: list[Pass], prompt_len: int) -> list[Pass]:
    """Target passes that score a new position (a prefill over part of the prompt does not)."""
    return [ps for ps in trace if len(ps.context) >= prompt_len]


def _first_mismatch(a: tuple[int, ...] | list[int], b: list[int]) -> int | None:
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return None


def _measure(solution: ModuleType, target: CausalLM, draft: CausalLM, prompt: list[int],
             budget: int, k: int) -> dict[str, float]:
    """Wall clock of the learner's loop vs plain greedy of the same target: interleaved, medians."""
    from lab.exercises.spec_verify.lm import plain_greedy

    target.record = draft.record = False
    target.ledger = draft.ledger = None  # the passes were judged already; only time here
    spec_t, plain_t = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        solution.speculative_generate(target, draft, list(prompt), budget, k)
        spec_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        plain_greedy(target, prompt, budget)
        plain_t.append(time.perf_counter() - t0)
    spec_t.sort()
    plain_t.sort()
    return {"spec_s": spec_t[1], "plain_s": plain_t[1]}


def _tree_inputs(p: dict[str, Any]) -> tuple[list[int], list[int], torch.Tensor]:
    """A tree with random tokens and logits whose argmax walks branch `branch` for `accept` steps.

    With `dup`, a sibling before the matching child carries a different token and one after it
    the same token (the first matching child must win).
    """
    par = list(p["parents"])
    n = len(par)
    g = torch.Generator().manual_seed(int(p["seed"]))
    v = 40
    tokens = torch.randint(0, v, (n,), generator=g).tolist()
    logits = torch.randn(n, v, generator=g)
    children: list[list[int]] = [[] for _ in par]
    for i in range(1, n):
        children[par[i]].append(i)
    cur = 0
    for _ in range(int(p["accept"])):
        kids = children[cur]
        if not kids:
            break
        pick = kids[min(int(p.get("branch", 0)), len(kids) - 1)]
        if p.get("dup"):
            for other in kids:
                if other < pick:
                    tokens[other] = (tokens[pick] + 1) % v
                elif other > pick:
                    tokens[other] = tokens[pick]
        logits[cur, tokens[pick]] = logits[cur].max() + 1.0
        cur = pick
    # stop there: no child of `cur` may carry the argmax
    best = int(logits[cur].argmax())
    for c in children[cur]:
        if tokens[c] == best:
            tokens[c] = (best + 1) % v
    return tokens, par, logits


def _run_l5(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> object:
    if p["kind"] == "mask":
        mask = solution.tree_attention_mask(list(p["parents"]))
        if not isinstance(mask, torch.Tensor):
            return {"error": f"tree_attention_mask must return a torch.Tensor, got "
                             f"{type(mask).__name__}"}
        return {"mask": mask.to(torch.bool).tolist(), "dtype": str(mask.dtype),
                "shape": list(mask.shape)}
    if p["kind"] == "verify":
        tokens, par, logits = _tree_inputs(p)
        got = solution.verify_tree(list(tokens), list(par), logits.clone())
        path, nxt = got
        return {"path": _plain(path), "next": int(nxt), "tokens": tokens,
                "best": logits.argmax(-1).tolist()}
    return _tree_generate(solution, p, ctx)


def _tree_generate(solution: ModuleType, p: dict[str, Any], ctx: RunContext) -> object:
    """The grader's tree loop around the solution's mask and verifier (greedy, batch 1).

    The draft proposes `width` children of the root (its top tokens) and extends each greedily to
    `depth` nodes; branch 0 is exactly the chain a k = depth loop would have drafted. Every pass
    must accept what the best branch accepts alone (so at least that chain's acceptance).
    """
    device = ctx.device if p["model"] == "shipped" else "cpu"
    target, draft, prompt = _models(p, device, ctx.model_paths)
    budget, width, depth = int(p["max_new_tokens"]), int(p["width"]), int(p["depth"])
    plain, gaps, second = _greedy_with_gaps(target, prompt, budget)
    target.reset()
    draft.reset()
    seq = list(prompt)
    out: list[int] = []
    if len(seq) > 1:
        target.forward(seq[:-1])
    passes = tree_acc = chain_acc = 0
    fault = ""
    while len(out) < budget:
        n = len(seq)
        d = min(depth, budget - len(out) - 1)
        tokens, par = [seq[-1]], [-1]
        if d > 0:
            draft.crop(min(draft.cache_len, n - 1))
            if draft.cache_len < n - 1:
                draft.forward(seq[draft.cache_len : n - 1])
            top = torch.topk(draft.forward([seq[-1]])[-1], width).indices.tolist()
            for b in range(width):
                draft.crop(n)
                node, tok = 0, top[b]
                for step in range(d):
                    tokens.append(tok)
                    par.append(node)
                    node = len(tokens) - 1
                    if step + 1 < d:
                        tok = int(draft.forward([tok])[-1].argmax())
        mask = solution.tree_attention_mask(list(par))
        logits = target.forward_tree(tokens, mask)
        passes += 1
        path, nxt = solution.verify_tree(list(tokens), list(par), logits.clone())
        path = [int(i) for i in _plain(path)]
        walk = 0
        for i in path:
            if not 0 < i < len(par) or par[i] != walk:
                fault = (f"verify_tree returned path {path}, which is not a root-to-node chain of "
                         f"the tree (parents {par})")
                break
            walk = i
        if fault:
            break
        best = logits.argmax(-1).tolist()
        # each branch b is a chain of d nodes 1 + b*d .. (b+1)*d; the root's children carry
        # distinct tokens, so the first-match walk accepts what the best branch accepts alone
        matches = []
        for b in range(width if d > 0 else 0):
            m = 0
            while m < d and tokens[1 + b * d + m] == best[0 if m == 0 else b * d + m]:
                m += 1
            matches.append(m)
        chain = matches[0] if matches else 0
        most = max(matches, default=0)
        tree_acc += len(path)
        chain_acc += chain
        if len(path) < most:
            b = matches.index(most)
            fault = (f"pass {passes}: verify_tree accepted {len(path)} tokens, but branch {b} "
                     f"of the tree (root child {1 + b * d}) matches the target for {most}: at "
                     f"each node follow the (first) child whose token is the target's argmax - "
                     f"try every child, not only the first")
            break
        emitted = ([tokens[i] for i in path] + [int(nxt)])[: budget - len(out)]
        out += emitted
        seq += emitted
        base = n - 1
        target.keep([*range(base + 1), *(base + i for i in path)])
    return {"out": out, "plain": plain, "gaps": gaps, "second": second, "fault": fault,
            "passes": passes, "tree_acc": tree_acc, "chain_acc": chain_acc}


# ---------------------------------------------------------------------------------------------
# Check


def check(case: Case, got: object, expected: object) -> Verdict:
    """Judge one observation; the message names the bug (expected vs got)."""
    if case.level == 1:
        return _check_l1(case, got, expected)
    if case.level in (2, 3):
        return _check_sampling(case, got)
    if case.level == 5:
        return _check_l5(case, got, expected)
    return _check_l4(case, got, expected)


def _walk_variant(tokens: list[int], par: list[int], best: list[int], bug: str
                  ) -> tuple[list[int], int]:
    """What a classic wrong tree walk returns (to name the bug in a failure message)."""
    path: list[int] = []
    cur = 0
    while True:
        kids = [c for c in range(1, len(par)) if par[c] == cur]
        if bug == "first_child":
            kids = kids[:1]
        nxt = next((c for c in kids if tokens[c] == best[c if bug == "own_row" else cur]), None)
        if nxt is None:
            return path, best[cur]
        path.append(nxt)
        cur = nxt


def _check_l5(case: Case, got: Any, expected: Any) -> Verdict:
    p = case.params
    if "error" in got:
        return Verdict(False, got["error"])
    if p["kind"] == "mask":
        par = p["parents"]
        if got["shape"] != expected["shape"]:
            return Verdict(False, f"the mask must be [N, N] = {expected['shape']}, got "
                                  f"{got['shape']}")
        if got["mask"] == expected["mask"]:
            return Verdict(True)
        for i, (row_g, row_e) in enumerate(zip(got["mask"], expected["mask"], strict=True)):
            for j, (a, b) in enumerate(zip(row_g, row_e, strict=True)):
                if a == b:
                    continue
                if i == j:
                    why = "a node must attend to itself (the diagonal is True)"
                elif a and j < i:
                    why = (f"node {j} is not an ancestor of node {i} (parents {par}): a "
                           f"causal (lower-triangular) mask lets siblings and other branches leak")
                elif a:
                    why = f"node {i} attends to a later node {j}"
                else:
                    why = f"node {j} is an ancestor of node {i} (parents {par}) and must be visible"
                return Verdict(False, f"mask[{i}][{j}] is {a}, expected {b}: {why}")
        return Verdict(False, "mask differs")
    if p["kind"] == "verify":
        want = (expected["path"], expected["next"])
        have = (got["path"], got["next"])
        if have == want:
            return Verdict(True)
        head = (f"parents {p['parents']}, tokens {got['tokens']}, argmax per row {got['best']}: "
                f"expected path {want[0]} then {want[1]}, got path {have[0]} then {have[1]}")
        tokens, par, best = got["tokens"], p["parents"], got["best"]
        row_msg = ("row i scores the position after node i, so a child c of node i is accepted "
                   "when tokens[c] == argmax(row i) - the parent's row, not the child's own")
        kid_msg = "stopped too early: at a node, try every child, not only the first"
        own_row = have == _walk_variant(tokens, par, best, "own_row")
        first_child = have == _walk_variant(tokens, par, best, "first_child")
        if own_row or first_child:
            why = " - or - ".join(m for m, hit in ((kid_msg, first_child), (row_msg, own_row))
                                  if hit)
            return Verdict(False, f"{why}; {head}")
        if have[0] == want[0]:
            return Verdict(False, f"right path, wrong last token: it is the argmax of the row of "
                                  f"the last accepted node (the root's row if none); {head}")
        return Verdict(False, f"a child c of node i is accepted when tokens[c] == argmax(row i), "
                              f"the first such child wins; {head}")
    # tree_generate
    if got["fault"]:
        return Verdict(False, got["fault"])
    out, want = got["out"], expected["plain"]
    metrics = {"tree_tokens_per_pass": len(out) / max(got["passes"], 1),
               "chain_tokens_per_pass": (got["chain_acc"] + got["passes"]) / max(got["passes"], 1)}
    note = (f"tree: {metrics['tree_tokens_per_pass']:.2f} tokens per target pass vs "
            f"{metrics['chain_tokens_per_pass']:.2f} for its first branch alone (the k = depth "
            f"chain)")
    if out != want:
        at = next((j for j in range(min(len(out), len(want))) if out[j] != want[j]), None)
        if at is not None and expected["gaps"][at] < NEAR_TIE and out[at] == expected["second"][at]:
            return Verdict(True, f"near tie at token {at} excused. {note}", metrics)
        return Verdict(False, f"tree decoding differs from the target's greedy decoding at token "
                              f"{at}: expected {want}, got {out}")
    return Verdict(True, note, metrics)


def _check_l1(case: Case, got: Any, expected: Any) -> Verdict:
    out, exp = got["out"], expected["out"]
    drafts, best = got["draft"], got["argmax"]
    k = len(drafts)
    if out == exp:
        return Verdict(True)
    head = f"draft {drafts}, argmax per row {best}: expected {exp}, got {out}"
    if not isinstance(out, list) or not all(isinstance(t, int) for t in out):
        return Verdict(False, f"verify_greedy must return list[int]; {head}")
    m = len(exp) - 1  # accepted count
    shifted = []
    for i in range(k):
        if i + 1 <= k and drafts[i] == best[i + 1]:
            shifted.append(drafts[i])
        else:
            shifted.append(best[i + 1] if i + 1 <= k else best[i])
            break
    else:
        shifted.append(best[k])
    if out == shifted:
        return Verdict(False, f"off-by-one logits row: row i scores the token after the prefix "
                              f"plus draft[:i], so draft[i] is checked against argmax(row i), and "
                              f"the bonus is argmax(row k); {head}")
    if out == exp[:-1]:
        what = ("the bonus token argmax(row k) after all k matched" if m == k
                else f"the correction argmax(row {m}) after the first mismatch")
        return Verdict(False, f"the last token is missing: {what} (bonus token dropped?); {head}")
    if len(out) > len(exp) and out[: len(exp)] == exp:
        return Verdict(False, f"emitted tokens past the block's end: stop right after the first "
                              f"target token (correction or bonus); {head}")
    i = next((j for j in range(min(len(out), len(exp))) if out[j] != exp[j]), min(len(out),
                                                                                   len(exp)))
    return Verdict(False, f"first difference at index {i}; {head}")


def _check_sampling(case: Case, got: Any) -> Verdict:
    p = case.params
    kind = p["kind"]
    if kind in ("repro", "repro_batch"):
        if got["touched"]:
            return Verdict(False, "torch's global RNG state changed during the call: draw every "
                                  "random number from `generator` (global RNG instead of the "
                                  "generator?)")
        if not got["same"]:
            return Verdict(False, f"the same generator seed gave different outputs when only "
                                  f"torch's global seed changed (first outputs: {got['first']}): "
                                  f"use only `generator` for randomness")
        return Verdict(True)
    if kind == "large":
        return _check_large(got)
    if "error" in got:
        return Verdict(False, got["error"])
    if got["n_violations"]:
        examples = " | ".join(got["violations"])
        counts_list = [got["counts"]] if kind == "law" else got["counts"]
        full = any(len(key) == int((p if kind == "law" else p["rows"][j])["k"]) + 1
                   for j, c in enumerate(counts_list) for key in c)
        head = f"{got['n_violations']} malformed block(s)"
        if NO_BONUS in examples and all(NO_BONUS in v for v in got["violations"]):
            head = (("blocks that are exactly the k drafted tokens appear while other blocks "
                     "do end with a bonus: a drafted token a correct test accepts (p >= q) was "
                     "rejected and re-drawn as its own correction (q or p read at the wrong "
                     "position?)") if full else
                    ("all k drafted tokens accepted and no bonus token followed (bonus token "
                     "dropped: sample one more from p_{k+1}, the last row of target_probs)"))
        msg = f"{head}; e.g. {examples}"
        return Verdict(False, msg)
    tables = [p] if kind == "law" else p["rows"]
    counts = [got["counts"]] if kind == "law" else got["counts"]
    metrics: dict[str, float] = {}
    for j, (t, c) in enumerate(zip(tables, counts, strict=True)):
        c = {tuple(key): n for key, n in c.items()}
        where = "" if kind == "law" else f"batch rows using table {j}: "
        verdict = _law_tests(t, c, float(p["alpha"]), where)
        if not verdict.passed:
            return verdict
        metrics.update({f"{j}.{m}": v for m, v in verdict.metrics.items()})
    return Verdict(True, f"all chi-square tests pass at per-test alpha {p['alpha']:.1e} "
                         f"(false-failure rate of a correct solution <= {FAMILY_ALPHA:g} per "
                         f"level)",
                   {"min_p_value": min(metrics.values(), default=1.0)})


def _law_tests(t: dict[str, Any], counts: dict[tuple[int, ...], int], alpha: float, where: str
               ) -> Verdict:
    tp, tq = _as_tables(t)
    k = len(tq)
    n = sum(counts.values())
    pvals: dict[str, float] = {}

    def fail(what: str, res: stats.ChiSquare, hint: str) -> Verdict:
        detail = (f"impossible outcome(s) {list(res.impossible)[:3]} observed" if res.impossible
                  else f"chi-square {res.stat:.1f} on {res.df} df, p = {res.p_value:.2e} < "
                       f"{alpha:.1e}")
        return Verdict(False, f"{where}{what}: {detail} over {res.n} blocks ({res.table}). {hint}")

    def bad(res: stats.ChiSquare) -> bool:
        return bool(res.impossible) or res.p_value < alpha

    # 1. accepted count
    acc_law = {m: pr for m, pr in enumerate(stats.accept_count_law(tp, tq)) if pr > 0}
    acc_obs: Counter[int] = Counter()
    for blk, c in counts.items():
        acc_obs[len(blk) - 1] += c
    res = stats.chi_square(acc_obs, acc_law)
    pvals["accepted"] = res.p_value
    if bad(res):
        return fail("the number of accepted drafted tokens is off", res,
                    "Accept x_i with probability min(1, p_i(x_i)/q_i(x_i)): one U(0,1) coin per "
                    "drafted token, p and q read at the same position i (no coin when p > q, or q "
                    "from the wrong position, shifts this).")
    # 2. corrections after a rejection at position i, and the bonus
    for i in range(k + 1):
        obs: Counter[int] = Counter()
        for blk, c in counts.items():
            if len(blk) - 1 == i:
                obs[blk[-1]] += c
        if sum(obs.values()) < 20:
            continue
        law = ({z: pr for z, pr in enumerate(tp[k]) if pr > 0} if i == k else
               {z: pr for z, pr in enumerate(stats.residual(tp[i], tq[i])) if pr > 0})
        res = stats.chi_square(obs, law)
        pvals[f"last@{i}"] = res.p_value
        if bad(res):
            if i == k:
                return fail("the bonus token (all k accepted) is not distributed as p_{k+1}", res,
                            "Sample it from the last row of target_probs.")
            return fail(f"after a rejection at position {i} the emitted token is not distributed "
                        f"as norm(max(0, p_{i + 1} - q_{i + 1}))", res,
                        "Resample from the residual max(0, p - q), normalised (resampling from p "
                        "instead of the residual?).")
    # 3. first token ~ p_1 and the whole block
    first: Counter[int] = Counter()
    for blk, c in counts.items():
        first[blk[0]] += c
    res = stats.chi_square(first, {z: pr for z, pr in enumerate(tp[0]) if pr > 0})
    pvals["first"] = res.p_value
    if bad(res):
        return fail("the first emitted token is not distributed as p_1", res,
                    "Whatever happens later, a block's first token must follow the target.")
    res = stats.chi_square(counts, stats.block_law(tp, tq))
    pvals["joint"] = res.p_value
    if bad(res):
        return fail("the law of whole blocks differs from Leviathan/Chen's", res,
                    "Check each position's p_i, q_i and the stop rule.")
    return Verdict(True, f"{n} blocks", {f"p_{key}": v for key, v in pvals.items()})


def _check_large(got: dict[str, Any]) -> Verdict:
    out, drafts, v, k, b = got["out"], got["draft"], got["V"], got["k"], got["B"]
    if not isinstance(out, list) or len(out) != b:
        return Verdict(False, f"verify_batch must return B = {b} lists")
    for bi, (row, d) in enumerate(zip(out, drafts, strict=True)):
        if not isinstance(row, list) or not 1 <= len(row) <= k + 1:
            return Verdict(False, f"row {bi}: a block has 1..k+1 = {k + 1} tokens, got {row!r:.80}")
        if any(not isinstance(t, int) or not 0 <= t < v for t in row):
            return Verdict(False, f"row {bi}: token ids must be ints in [0, {v}), got {row}")
        if row[:-1] != d[: len(row) - 1]:
            return Verdict(False, f"row {bi}: tokens before the last must be the accepted draft "
                                  f"prefix {d[: len(row) - 1]}, got {row[:-1]} (padding leaked?)")
    return Verdict(True)


def _check_l4(case: Case, got: Any, expected: Any) -> Verdict:
    p = case.params
    kind = p["kind"]
    if kind == "repro":
        return _check_sampling(case, got)
    if kind == "sampled_structure":
        for out in got["outs"]:
            msg = _ending(out, got["budget"], got["eos"], got["V"])
            if msg:
                return Verdict(False, msg)
        return Verdict(True)
    if kind == "timed":
        if got["out"] != expected["out"]:
            return Verdict(False, f"greedy output differs from the reference's (which equals the "
                                  f"target's plain greedy decoding): expected {expected['out']}, "
                                  f"got {got['out']}")
        return Verdict(True)
    if kind == "law":
        if got.get("bad"):
            return Verdict(False, f"sampled generation must return exactly max_new_tokens = "
                                  f"{p['max_new_tokens']} tokens here (no EOS), got "
                                  f"{got['bad'][0]!r:.80}")
        law = {tuple(key): v for key, v in expected["law"].items()}
        counts = {tuple(key): n for key, n in got["counts"].items()}
        res = stats.chi_square(counts, law)
        alpha = float(p["alpha"])
        if res.impossible or res.p_value < alpha:
            return Verdict(False, (
                f"at temperature {p['temperature']} the first {p['max_new_tokens']} tokens do not "
                f"follow the target's sampling law: chi-square {res.stat:.1f} on {res.df} df, p = "
                f"{res.p_value:.2e} < {alpha:.1e} over {res.n} runs ({res.table}). q must be the "
                f"draft distribution the token was sampled from (same temperature), p the "
                f"target's softmax(logits / T)."))
        return Verdict(True, f"law ok (p = {res.p_value:.3f})", {"p_value": res.p_value})
    # greedy
    out, plain = got["out"], expected["plain"]
    budget, eos = int(p["max_new_tokens"]), expected["eos"]
    msg = _ending(out, budget, eos, None)
    if msg:
        return Verdict(False, msg)
    if got["target_fault"]:
        return Verdict(False, got["target_fault"])
    if got["pass_fault"]:
        return Verdict(False, got["pass_fault"])
    if got["draft_fault"]:
        return Verdict(False, got["draft_fault"])
    want = plain[: plain.index(eos) + 1] if eos is not None and eos in plain else plain
    metrics = _metrics(got)
    note = _metrics_note(metrics, int(p["k"]))
    if out != want:
        i = next((j for j in range(min(len(out), len(want))) if out[j] != want[j]), None)
        if i is None:
            return Verdict(False, f"returned {len(out)} tokens, expected {len(want)}: stop only "
                                  f"at EOS or after max_new_tokens = {budget} (got {out}, "
                                  f"expected {want})")
        gap = expected["gaps"][i]
        if gap < NEAR_TIE and out[i] == expected["second"][i]:
            return Verdict(True, f"diverged at token {i} where the target's top-2 logits differ "
                                 f"by {gap:.1e} < {NEAR_TIE:g} (near tie, excused). {note}",
                           metrics)
        return Verdict(False, f"token {i} differs from the target's plain greedy decoding: "
                              f"expected {want[i]}, got {out[i]} (top-2 gap {gap:.3g}); expected "
                              f"{want}, got {out}")
    return Verdict(True, note, metrics)


def _ending(out: Any, budget: int, eos: int | None, vocab: int | None) -> str:
    if not isinstance(out, list) or not all(isinstance(t, int) for t in out):
        return f"speculative_generate must return list[int], got {out!r:.80}"
    if vocab is not None and any(not 0 <= t < vocab for t in out):
        return f"token ids must be in [0, {vocab}), got {out}"
    if len(out) > budget:
        return (f"returned {len(out)} tokens but max_new_tokens = {budget} (budget overrun by "
                f"{len(out) - budget}): clip the last block to the budget")
    if eos is not None and eos in out[:-1]:
        i = out.index(eos)
        return (f"generation went on after EOS ({eos}) at index {i}: drop what follows the first "
                f"EOS, even inside an accepted block (got {out})")
    if len(out) < budget and (eos is None or not out or out[-1] != eos):
        return (f"returned {len(out)} tokens without reaching EOS: generate exactly "
                f"max_new_tokens = {budget} unless EOS comes first (got {out})")
    return ""


def _metrics(got: dict[str, Any]) -> dict[str, float]:
    n = len(got["out"])
    m: dict[str, float] = {
        "target_passes_per_token": got["target_passes"] / max(n, 1),
        "tau": n / max(got["verify_passes"], 1),
    }
    if got["judged"]:
        # per-position acceptance: accepted / (accepted + first rejections), the estimate the
        # formula (1 - alpha^(k+1)) / (1 - alpha) assumes
        m["alpha"] = got["accepted"] / got["judged"]
    if "spec_s" in got:
        m["speedup_vs_plain"] = got["plain_s"] / got["spec_s"]
        m["tokens_per_s"] = n / got["spec_s"]
    return m


def _metrics_note(m: dict[str, float], k: int) -> str:
    if "alpha" not in m:
        return f"τ = {m['tau']:.2f} tokens per target pass (k = {k})"
    a = m["alpha"]
    formula = (k + 1.0) if a >= 1 else (1 - a ** (k + 1)) / (1 - a)
    m["tau_formula"] = formula
    note = (f"α̂ = {a:.2f}, τ = {m['tau']:.2f} tokens per target pass vs formula "
            f"(1 − α^(k+1))/(1 − α) = {formula:.2f} (k = {k}); "
            f"{m['target_passes_per_token']:.2f} target passes per token")
    if "speedup_vs_plain" in m:
        note += f"; {m['speedup_vs_plain']:.2f}x the speed of plain greedy decoding"
    return note
