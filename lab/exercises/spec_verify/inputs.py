"""Deterministic inputs for spec-verify cases, built the same way in the child and the parent.

The child (`drive.py`) builds a case's inputs from its plain params and hands them to the
learner's functions; the parent (`grading/`) rebuilds the very same inputs to judge what came
back, so nothing the child reports about its inputs is trusted. Everything here is a pure
function of the params (seeded generators, models built under a forked RNG): no judging.
"""

from __future__ import annotations

import math
import random
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import torch

SHIPPED_PROMPTS = [  # the shipped pair was trained on Python source
    "import os\nimport sys\n\n\ndef main(argv):\n    ",
    "class Queue:\n    def __init__(self, maxsize=0):\n        self.maxsize = maxsize\n",
    "def _read_config(path):\n    \"\"\"Read the configuration file.\"\"\"\n    with open(",
    "    for i in range(len(items)):\n        if items[i] is None:\n            ",
    "try:\n    import threading\nexcept ImportError:\n",
]

# ---------------------------------------------------------------------------------------------
# Levels 2-3: probability tables -> tensors, and the drafted blocks (drawn by the grader from q)


def tensors(t: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
    """The fp32 target [k+1, V] and draft [k, V] probabilities a table hands the learner."""
    v, k = int(t["V"]), int(t["k"])
    tp = torch.tensor(t["p"], dtype=torch.float64)
    tp = (tp / tp.sum(-1, keepdim=True)).float()
    tq = torch.tensor(t["q"], dtype=torch.float64).reshape(k, v)
    tq = (tq / tq.sum(-1, keepdim=True).clamp_min(1e-300)).float()
    return tp, tq


def draws(tq: torch.Tensor, n: int, seed: int) -> torch.Tensor:
    """n drafted blocks [n, k], each token sampled from its q_i (the grader's own generator)."""
    k = tq.shape[0]
    if k == 0:
        return torch.zeros(n, 0, dtype=torch.long)
    g = torch.Generator().manual_seed(seed + 7919)
    return torch.stack([torch.multinomial(tq[i], n, replacement=True, generator=g)
                        for i in range(k)], dim=1)


def batch_inputs(rows: list[dict[str, Any]], per_row: int, seed: int
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int]]:
    """Interleave the row tables (row b uses table b % R) so neighbours accept different lengths."""
    r = len(rows)
    ps, qs, xs = [], [], []
    for j, t in enumerate(rows):
        tp, tq = tensors(t)
        ps.append(tp)
        qs.append(tq)
        xs.append(draws(tq, per_row, seed + 1000 * j))
    b = per_row * r
    which = [i % r for i in range(b)]
    idx = torch.tensor(which)
    pos = torch.arange(b) // r
    return torch.stack(xs)[idx, pos], torch.stack(qs)[idx], torch.stack(ps)[idx], which


def batch_calls(p: dict[str, Any]
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, list[int], int]:
    """A level-3 batch case's rows for all its calls, drawn at once (the child passes them to
    the learner, the parent judges them): call c gets rows c*b .. (c+1)*b - 1 of `x`, and
    `tq`, `tp` (b rows) serve every call, since the tables repeat every len(rows) rows.
    Returns (x, tq, tp, which, b)."""
    n_calls = int(p.get("calls", 1))
    x, tq, tp, which = batch_inputs(p["rows"], int(p["per_row"]) * n_calls, int(p["seed"]))
    b = x.shape[0] // n_calls
    return x, tq[:b], tp[:b], which, b


@lru_cache(maxsize=2)
def large_inputs(seed: int, b: int, k: int, v: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(q [B, k, V], p [B, k+1, V]) of the large-vocabulary batch, built once per process so a
    timed round trip measures the verifier, not the making of 10^7 random probabilities (its
    drafts are drawn per call: `large_drafts`).

    The rows `large_forced` names have an answer no coin can change, whatever the drafts: in an
    "accept" row q == p at every drafted position (p/q = 1: always accepted) and the bonus row
    is one-hot; in a "reject" row the first position's p is one-hot on a token q never drafts
    (p = 0 for every draft: always rejected; the residual max(0, p - q) is that one-hot). The
    grader compares those rows of every timed call exactly with the reference's."""
    g = torch.Generator().manual_seed(seed)
    tp = torch.softmax(torch.randn(b, k + 1, v, generator=g) * 4, -1)
    tq = torch.softmax(torch.randn(b, k, v, generator=g) * 4, -1)
    half = v // 2
    for row, kind in large_forced(seed, b, k, v).items():
        if kind == "coin" and k:  # p(x) / q(x) = 1/2 for every x q can draft at position 0
            tq[row, 0, half:] = 0.0
            tq[row, 0] /= tq[row, 0].sum()
            rest = tp[row, 0].clone()
            rest[:half] = 0.0
            tp[row, 0] = tq[row, 0] / 2 + rest / rest.sum() / 2
        elif kind == "accept":
            tq[row] = tp[row, :k]
            tp[row, k] = 0.0
            tp[row, k, (seed + 7 * row) % v] = 1.0
        elif k:
            tp[row, 0] = 0.0
            tp[row, 0, v - 1 - row] = 1.0  # q's support stops before it (below)
            tq[row, 0, v - 1 - b:] = 0.0
            tq[row, 0] /= tq[row, 0].sum()
    return tq, tp


@lru_cache(maxsize=2)
def large_forced(seed: int, b: int, k: int, v: int) -> dict[int, str]:
    """Rows of the large batch with a known law, drawn from the case's seed (the learner cannot
    tell them from the shapes): an eighth "accept" and an eighth "reject" (forced answers), and
    half "coin" (the first draft is accepted with probability exactly 1/2)."""
    rows = random.Random(f"large-forced/{seed}").sample(range(b), max(4, b // 4 + b // 2))
    kinds = {r: ("accept" if i % 2 == 0 else "reject") for i, r in enumerate(rows[: b // 4])}
    kinds.update({r: "coin" for r in rows[b // 4:]})
    return kinds


def large_drafts(seed: int, b: int, k: int, v: int, g: torch.Generator) -> torch.Tensor:
    """[B, k] drafted tokens, each drawn from its row of q, fresh for every timed call: by
    inverse CDF over q's cumulative sums (built once per process), so a call pays microseconds
    for them, not a pass over the vocabulary that would dilute the timed ratio."""
    cdf = _large_cdf(seed, b, k, v)
    u = torch.rand(b, k, 1, generator=g, dtype=torch.float64) * cdf[..., -1:]
    return torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp_max(v - 1)


@lru_cache(maxsize=2)
def _large_cdf(seed: int, b: int, k: int, v: int) -> torch.Tensor:
    return large_inputs(seed, b, k, v)[0].double().cumsum(-1)


# ---------------------------------------------------------------------------------------------
# Level 1: synthetic logits


def l1_logits(p: dict[str, Any]) -> tuple[list[int], torch.Tensor]:
    """Drafts and [k+1, V] logits whose argmax accepts exactly `accept` drafted tokens.

    `tie`: every row's top value is shared by two ids; the lowest id is the argmax and a draft
    that matches the other tied id is a mismatch. `zero`: id 0 is the argmax of every row.
    """
    g = torch.Generator().manual_seed(int(p["seed"]))
    v, k, m = int(p["V"]), int(p["k"]), int(p["accept"])
    logits = torch.randn(k + 1, v, generator=g) * 3
    if p.get("zero"):
        logits[:, 0] = logits.max(dim=-1).values + 1.0
    if p.get("tie") and v > 1:
        for i in range(k + 1):
            a, b = sorted(torch.randperm(v, generator=g)[:2].tolist())
            logits[i, a] = logits[i, b] = logits[i].max() + 1.0
    if p.get("near") and v > 1:  # top-2 within 1e-4 at ~10: equal in bf16/fp16, not in fp32
        for i in range(k + 1):
            a, b = sorted(torch.randperm(v, generator=g)[:2].tolist())
            top = float(logits[i].max()) + 10.0
            logits[i, b], logits[i, a] = top, top - 1e-4  # the higher id wins by a hair
    best = logits.argmax(dim=-1).tolist()  # ties: the lowest id (torch.argmax's rule)
    drafts: list[int] = []
    for i in range(k):
        if i == m and v > 1:
            tied = [j for j in range(v) if j != best[i] and logits[i, j] == logits[i, best[i]]]
            if tied:
                drafts.append(tied[0])  # the other tied id: not the argmax
            else:
                other = int(torch.randint(0, v - 1, (1,), generator=g))
                drafts.append(other if other < best[i] else other + 1)  # anything but the argmax
        else:
            drafts.append(best[i])  # accepted prefix, and after a mismatch: tempting matches
    return drafts, logits


# ---------------------------------------------------------------------------------------------
# Level 5: trees


def tree_inputs(p: dict[str, Any]) -> tuple[list[int], list[int], torch.Tensor]:
    """A tree with random tokens and logits whose argmax walks branch `branch` for `accept` steps.

    With `dup`, a sibling before the matching child carries a different token and one after it
    the same token (the first matching child must win). With `root_token_last`, the walk ends at
    the last node and the target's argmax there is the root's own token: a children list that
    appends the root (parents[0] == -1) to children[-1] walks back into the root.
    """
    par = list(p["parents"])
    n = len(par)
    g = torch.Generator().manual_seed(int(p["seed"]))
    v = int(p.get("V", 40))
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
    if p.get("root_token_last"):
        logits[cur, tokens[0]] = logits[cur].max() + 1.0
    # stop there: no child of `cur` may carry the argmax
    best = int(logits[cur].argmax())
    for c in children[cur]:
        if tokens[c] == best:
            tokens[c] = (best + 1) % v
    return tokens, par, logits


# ---------------------------------------------------------------------------------------------
# Levels 1, 4, 5: model pairs


@lru_cache(maxsize=32)  # a level uses up to ~15 pairs: built once per process
def tiny_pair(seed: int, vocab: int, hidden: int, layers: int, noise: float, draft_seed: int = -1,
              swap: int = 0) -> tuple[Any, Any]:
    """A random target and a draft = target + noise (agrees often, not always); fp32, CPU.

    `draft_seed` >= 0: an unrelated draft (its own random weights). `swap` = t > 0: ids 0 and t
    exchanged in both models' embeddings and output layers (a relabelled vocabulary: the same
    computation, with t renamed 0). Built under a forked RNG so torch's global state is untouched.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, initializer_range=0.2, tie_word_embeddings=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        target = LlamaForCausalLM(cfg).train(False)
        draft = LlamaForCausalLM(cfg).train(False)
        if draft_seed >= 0:
            torch.manual_seed(draft_seed)
            draft = LlamaForCausalLM(cfg).train(False)
        else:
            draft.load_state_dict(target.state_dict())
            with torch.no_grad():
                for prm in draft.parameters():
                    prm.add_(noise * torch.randn_like(prm))
    if swap:
        order = list(range(vocab))
        order[0], order[swap] = swap, 0
        idx = torch.tensor(order)
        with torch.no_grad():
            for model in (target, draft):
                emb = model.get_input_embeddings().weight
                emb.copy_(emb[idx])
                head = model.get_output_embeddings().weight
                head.copy_(head[idx])
    return target, draft


_LOADING = threading.Lock()


def shipped(device: str, target: str | None = None, draft: str | None = None
            ) -> tuple[Any, Any, Any]:
    """The shipped pair in fp32 (greedy equality is graded in fp32), or the learner's own
    checkpoints from `dojo lab grade --target PATH --draft PATH`; loaded once per process,
    one thread at a time (the grader builds a case's inputs and another's answer on two
    threads, and transformers' loading is not thread-safe: two at once left meta tensors)."""
    with _LOADING:
        return _shipped(device, target, draft)


@lru_cache(maxsize=2)
def _shipped(device: str, target: str | None, draft: str | None) -> tuple[Any, Any, Any]:
    try:
        from lab.models import load_pair
    except ImportError as exc:
        raise RuntimeError("the shipped draft/target pair (lab.models) is not installed") from exc
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # a clean report
    pair = load_pair(target=target, draft=draft, device=device, dtype="float32")
    # a padded vocabulary (1,024 logits over a 1,000-token tokenizer) is cut to the ids both
    # models and the tokenizer share: no model may propose an id the other cannot take
    shared = min(pair.vocab_size, len(pair.tokenizer))
    for model in (pair.target, pair.draft):
        model.lab_vocab_size = shared  # read by CausalLM
    return pair.target, pair.draft, pair.tokenizer


@dataclass
class GreedyTrace:
    """A model's plain greedy decoding of one prompt so far: the tokens, per position the gap
    between the top-2 logits and the runner-up id (what a divergence is excused by)."""

    tokens: list[int] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    second: list[int] = field(default_factory=list)


@dataclass
class _Decoding:
    lm: Any  # the CausalLM holding the prompt and the tokens so far in its KV cache
    logits: Any  # the next token's logits
    trace: GreedyTrace


GREEDY_KEPT = 32  # decodings held (with their KV caches) for extension; a level has fewer prompts
_decodings: OrderedDict[tuple[int, tuple[int, ...]], _Decoding] = OrderedDict()


def greedy(model: Any, prompt: list[int], n: int) -> GreedyTrace:
    """The first `n` tokens of `model`'s plain greedy decoding of `prompt` (one KV-cached pass
    per token), with their top-2 gaps. Kept per (model, prompt) and extended when more tokens
    are asked, so cases sharing a prompt (an EOS picked from the decoding, then the decoding
    the output is judged against) decode it once; the calls are the same whatever the order
    of the requests, so every process gets the same tokens."""
    from lab.exercises.spec_verify.lm import CausalLM

    key = (id(model), tuple(prompt))
    dec = _decodings.get(key)
    if dec is None or dec.lm.model is not model:
        dec = None
        if n <= 0:
            return GreedyTrace()
        lm = CausalLM(model, name="target")
        dec = _Decoding(lm, lm.forward(list(prompt))[-1], GreedyTrace())
    _decodings[key] = dec
    _decodings.move_to_end(key)
    while len(_decodings) > GREEDY_KEPT:
        _decodings.popitem(last=False)
    tr = dec.trace
    while len(tr.tokens) < n:
        if tr.tokens:
            dec.logits = dec.lm.forward([tr.tokens[-1]])[-1]
        top = torch.topk(dec.logits, min(2, dec.logits.shape[-1]))
        tr.tokens.append(int(top.indices[0]))
        tr.gaps.append(float(top.values[0] - top.values[-1]) if dec.logits.shape[-1] > 1
                       else math.inf)
        tr.second.append(int(top.indices[-1]))
    return GreedyTrace(tr.tokens[:n], tr.gaps[:n], tr.second[:n])


def pick_eos(plain: list[int], at: int) -> int:
    """An id that first appears in `plain` at index >= `at` if possible (else plain[at])."""
    at = min(at, len(plain) - 1)
    for tok in plain[at:]:
        if tok not in plain[:at]:
            return tok
    return plain[at]


@lru_cache(maxsize=64)
def _tiny_case(key: tuple[tuple[str, Any], ...]) -> tuple[Any, Any, tuple[int, ...], int | None]:
    p = dict(key)
    if p["model"] == "law":
        law = p.get("law_pair", (3, 8, 32, 1, 0.3))
        target, draft = tiny_pair(*law)
        return target, draft, tuple(p.get("prompt_ids", (5,))), None
    vocab = 64
    base = (int(p["pair_seed"]), vocab, 64, 2, float(p.get("noise", 0.01)),
            int(p.get("draft_seed", -1)))
    target, draft = tiny_pair(*base)
    prng = random.Random(p.get("prompt_seed", 0))
    prompt = [prng.randrange(vocab) for _ in range(int(p.get("prompt_len", 5)))]
    at, in_prompt = p.get("eos_at"), p.get("eos_prompt_at")
    if in_prompt is not None:  # EOS is a token of the prompt (it may also come out later)
        eos = prompt[int(in_prompt)]
    elif at is None:
        return target, draft, tuple(prompt), None
    else:
        plain = greedy(target, prompt, int(at) + 1).tokens
        eos = pick_eos(plain, int(at))
    if not p.get("eos_zero") or eos == 0:
        return target, draft, tuple(prompt), eos
    # relabel: the EOS token becomes id 0 (the shipped pair's own EOS id), same computation
    target, draft = tiny_pair(*base, swap=eos)
    prompt = [0 if t == eos else eos if t == 0 else t for t in prompt]
    return target, draft, tuple(prompt), 0


def models(p: dict[str, Any], device: str, paths: dict[str, str] | None = None
           ) -> tuple[Any, Any, list[int], int | None]:
    """(target, draft) transformers models, the prompt ids and the EOS id a case hands over.

    Shipped-pair cases pick EOS from the target's greedy output (`eos_at`); tiny-pair cases can
    also relabel it to id 0 (`eos_zero`), so `if eos_token_id:` is caught deterministically.
    """
    if p["model"] == "shipped":
        paths = paths or {}
        target, draft, tok = shipped(device, paths.get("target"), paths.get("draft"))
        prompt = [int(t) for t in tok.encode(SHIPPED_PROMPTS[int(p["prompt"])])]
        eos = None
        if p.get("eos_at") is not None:
            at = int(p["eos_at"])
            eos = pick_eos(greedy(target, prompt, at + 1).tokens, at)
        return target, draft, prompt, eos
    keys = ("model", "pair_seed", "noise", "draft_seed", "prompt_seed", "prompt_len", "eos_at",
            "eos_zero", "law_pair", "prompt_ids", "eos_prompt_at")
    key = tuple((name, _frozen(p[name])) for name in keys if name in p)
    target, draft, ids, eos = _tiny_case(key)
    return target, draft, list(ids), eos


def _frozen(x: Any) -> Any:
    return tuple(_frozen(y) for y in x) if isinstance(x, list | tuple) else x


def l1_inputs(p: dict[str, Any], device: str, paths: dict[str, str] | None = None
              ) -> tuple[list[int], torch.Tensor]:
    """Level-1 inputs: synthetic logits, or the shipped draft's greedy proposal scored by the
    shipped target."""
    if p.get("model") != "shipped":
        return l1_logits(p)
    target, draft, prompt, _ = models(p, device, paths)
    from lab.exercises.spec_verify.lm import CausalLM

    t_lm, d_lm = CausalLM(target), CausalLM(draft)
    drafts: list[int] = []
    logits = d_lm.forward(prompt)[-1]
    for _ in range(int(p["k"])):
        drafts.append(int(logits.argmax()))
        logits = d_lm.forward([drafts[-1]])[-1]
    rows = t_lm.forward(prompt + drafts)[len(prompt) - 1:]
    return drafts, rows.float().cpu()
