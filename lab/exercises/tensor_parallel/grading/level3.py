"""Level 3 — greedy decoding of the shipped target at W = 2 with sharded weights and KV cache.

One case per prompt (a short and a longer one, and one of seeded random token ids): tokens equal
to the single-process greedy decode (computed here from the same checkpoint; a position whose
top-2 logit margin is under 1e-4 may flip under another summation order, and the comparison stops
there), every rank's KV cache holds only its KV heads (values checked for the first and last
layer), exactly one all-reduce per attention block and per MLP block per step (an all-gather for a
vocabulary-parallel head is allowed), and the bytes each decode step all-reduces are reported
beside the ring formula 2(W-1)/W x hidden x bytes per element per all-reduce.
"""

from __future__ import annotations

import functools
from typing import Any

from lab.exercises.tensor_parallel import runtime
from lab.exercises.tensor_parallel.grading.common import ATOL, RTOL, Fail, close, ranks_ok
from lab.exercises.tensor_parallel.grading.level2 import plan
from lab.grader.api import Case, Verdict

FLIP_MARGIN = 1e-4
PROMPTS = ([0, 105, 1290, 28, 367, 11, 72],  # two prompts of the shipped tokenizer's ids
           [0, 561, 303, 88, 4012, 19, 947, 14, 225, 3088, 61, 7, 530, 2201])


def cases(seed: int) -> list[Case]:
    import random

    rng = random.Random(f"tensor-parallel/3/{seed}")
    hidden = [0] + [rng.randrange(2, 4096) for _ in range(rng.randrange(4, 11))]
    out = []
    for i, prompt in enumerate([*PROMPTS, hidden]):
        out.append(Case(f"decode-w2-prompt{i}" if i < len(PROMPTS) else f"decode-w2-hidden-{seed}",
                        3,
                        {"kind": "decode", "world": 2, "prompt": prompt,
                         "max_new": 12 + 4 * i, "deadline_s": 30.0},
                        size=len(prompt), timeout_s=60.0, report=True,
                        description=f"greedy decode at W = 2 of a {len(prompt)}-token prompt"))
    return out


def expected(case: Case, checkpoint: str | None) -> Any:
    p = case.params
    return _dense(checkpoint or str(runtime.SHIPPED_TARGET), tuple(p["prompt"]), p["max_new"])


@functools.lru_cache(maxsize=8)
def _weights(folder: str) -> dict[str, Any]:
    import torch
    from safetensors.torch import load_file

    cfg = runtime.read_config(folder)
    w = {k: v.to(torch.float32) for k, v in load_file(cfg["weights"]).items()}
    return {"cfg": cfg, "w": w}


@functools.lru_cache(maxsize=16)
def _dense(folder: str, prompt: tuple[int, ...], max_new: int) -> dict[str, Any]:
    """Single-process greedy decode (whole-sequence forwards: the answer, not a speed), its
    top-2 margins, and every layer's rotated keys and values [kv_heads, tokens, head_dim]."""
    import torch

    loaded = _weights(folder)
    cfg, w = loaded["cfg"], loaded["w"]
    tokens, margins = list(prompt), []
    kv: list[tuple[Any, Any]] = []
    with torch.no_grad():
        for _ in range(max_new):
            logits, kv = _forward(cfg, w, tokens)
            top = logits.topk(2)
            margins.append(float(top.values[0] - top.values[1]))
            tokens.append(int(top.indices[0]))
        _, kv = _forward(cfg, w, tokens[:-1])
    return {"tokens": tokens[len(prompt):], "margins": margins, "kv": kv}


def _forward(cfg: dict[str, Any], w: dict[str, Any], tokens: list[int]) -> tuple[Any, Any]:
    import torch
    import torch.nn.functional as F

    t, d, eps = len(tokens), cfg["head_dim"], cfg["eps"]
    h = w["model.embed_tokens.weight"][torch.tensor(tokens)]
    pos = torch.arange(t)
    kv = []
    rep = cfg["heads"] // cfg["kv_heads"]
    for i in range(cfg["layers"]):
        p = f"model.layers.{i}."
        x = runtime.rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q = runtime.rope(F.linear(x, w[p + "self_attn.q_proj.weight"]).view(t, -1, d), pos,
                         cfg["theta"]).transpose(0, 1)
        k = runtime.rope(F.linear(x, w[p + "self_attn.k_proj.weight"]).view(t, -1, d), pos,
                         cfg["theta"]).transpose(0, 1)
        v = F.linear(x, w[p + "self_attn.v_proj.weight"]).view(t, -1, d).transpose(0, 1)
        kv.append((k, v))
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        a = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 0),
                                           v.repeat_interleave(rep, 0), attn_mask=mask)
        h = h + F.linear(a.transpose(0, 1).reshape(t, -1), w[p + "self_attn.o_proj.weight"])
        x = runtime.rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        h = h + F.linear(F.silu(F.linear(x, w[p + "mlp.gate_proj.weight"]))
                         * F.linear(x, w[p + "mlp.up_proj.weight"]), w[p + "mlp.down_proj.weight"])
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    logits = runtime.rms_norm(h[-1], w["model.norm.weight"], eps) @ head.T
    return logits, kv


def check(case: Case, got: Any, want: dict[str, Any], checkpoint: str | None) -> Verdict:
    p = case.params
    world = p["world"]
    cfg = _weights(checkpoint or str(runtime.SHIPPED_TARGET))["cfg"]
    ranks = ranks_ok(got, world)
    for r in ranks:
        try:
            _check_tokens(r, want)
        except Fail:
            _first_values(r, p, checkpoint or str(runtime.SHIPPED_TARGET), world)
            raise
    for r in ranks:
        _check_cache(r, want, cfg, world, p)
    return _traffic(ranks, cfg, world)


def _check_tokens(r: dict[str, Any], want: dict[str, Any]) -> None:
    got = [int(t) for t in r["value"]["tokens"]]
    exp = want["tokens"]
    if len(got) != len(exp):
        raise Fail(f"rank {r['rank']} produced {len(got)} tokens, expected {len(exp)}")
    for i, (g, e) in enumerate(zip(got, exp, strict=True)):
        if g == e:
            continue
        if want["margins"][i] < FLIP_MARGIN:
            return  # a near-tie: another summation order may pick the other token
        raise Fail(f"rank {r['rank']}'s token {i} is {g}, the single-process greedy decode "
                   f"gives {e} (tokens so far {exp[:i]}; margin "
                   f"{want['margins'][i]:.3f})"
                   + (": the first token is right, so the prefill is; a step goes wrong — is it "
                      "at the next position (RoPE), over the whole cache?" if i > 0 else
                      ": the sharded prefill differs from the model's forward"))


def _first_values(r: dict[str, Any], p: dict[str, Any], folder: str, world: int) -> None:
    """Wrong tokens: name the cause when layer 0's cached values (RoPE never touches them) are
    already wrong for the rank's own tokens - the first attention's input, not the positions -
    and say so outright when they are what the MLP's RMSNorm weight would give."""
    import torch
    import torch.nn.functional as F

    loaded = _weights(folder)
    cfg, w = loaded["cfg"], loaded["w"]
    kv = r["value"].get("kv", {}).get("0")
    heads = plan(cfg["heads"], cfg["kv_heads"], world, r["rank"])
    if not isinstance(kv, list) or len(kv) != 2 or heads is None:
        return
    got = kv[1]
    ids = [*p["prompt"], *(int(t) for t in r["value"]["tokens"])][: len(p["prompt"])
                                                                    + p["max_new"] - 1]
    d, eps = cfg["head_dim"], cfg["eps"]
    h = w["model.embed_tokens.weight"][torch.tensor(ids)]
    rows = torch.cat([torch.arange(k * d, (k + 1) * d) for k in heads["kv_heads"]])
    v_w = w["model.layers.0.self_attn.v_proj.weight"][rows]

    def values(norm: str) -> Any:
        x = runtime.rms_norm(h, w[f"model.layers.0.{norm}.weight"], eps)
        return F.linear(x, v_w).view(len(ids), -1, d).transpose(0, 1)

    def near(want: Any) -> bool:
        return isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(want.shape) and bool(
            torch.allclose(got, want, rtol=RTOL, atol=ATOL))

    if near(values("input_layernorm")):
        return
    if near(values("post_attention_layernorm")):
        raise Fail(f"rank {r['rank']}'s layer-0 cached values equal v_proj(rms_norm(x, "
                   "post_attention_layernorm.weight)): the two RMSNorm weights are swapped - "
                   "input_layernorm comes before attention, post_attention_layernorm before "
                   "the MLP (values carry no RoPE, so the positions are not the cause)")
    raise Fail(f"rank {r['rank']}'s layer-0 cached values already differ from v_proj(rms_norm("
               "embedding, input_layernorm.weight)) of its own tokens: the first attention's "
               "input is wrong (the embedding row, input_layernorm's weight or eps, or the v_proj "
               "rows of its KV heads) - values carry no RoPE, so the positions are not the cause")


def _check_cache(r: dict[str, Any], want: dict[str, Any], cfg: dict[str, Any], world: int,
                 p: dict[str, Any]) -> None:
    rank, v = r["rank"], r["value"]
    if v["cache_layers"] != cfg["layers"]:
        raise Fail(f"rank {rank}'s kv_cache() has {v['cache_layers']} layers, expected "
                   f"{cfg['layers']}")
    heads = plan(cfg["heads"], cfg["kv_heads"], world, rank)
    assert heads is not None
    kv_heads = heads["kv_heads"]
    length = len(p["prompt"]) + p["max_new"] - 1
    for layer, (k, val) in v["kv"].items():
        k_full, v_full = want["kv"][int(layer)]
        for name, got_t, full in (("keys", k, k_full), ("values", val, v_full)):
            exp = full[kv_heads]
            if hasattr(got_t, "shape") and tuple(got_t.shape) == (full.shape[0], length,
                                                                    full.shape[2]) \
                    and len(kv_heads) < full.shape[0]:
                raise Fail(f"rank {rank}'s layer-{layer} cache holds all {full.shape[0]} KV "
                           f"heads: each rank caches only its own KV heads {kv_heads} (the "
                           f"point of splitting the cache)")
            close(got_t, exp, f"rank {rank}'s layer-{layer} cached {name}",
                  f"[its KV heads {kv_heads}, {length} tokens, head_dim], keys after RoPE")


def _traffic(ranks: list[dict[str, Any]], cfg: dict[str, Any], world: int) -> Verdict:
    """Per decode step: the collectives each rank called and the bytes they moved."""
    layers, hidden = cfg["layers"], cfg["hidden"]
    payloads = []
    moved = []
    for r in ranks:
        log, marks = r["log"], r["value"]["marks"]
        for j in range(1, len(marks) - 1):  # decode steps (after the prefill)
            calls = log[marks[j]:marks[j + 1]]
            names = [c[0] for c in calls]
            n_ar = names.count("all_reduce")
            others = sorted({n for n in names if n not in ("all_reduce", "all_gather")})
            n_ag = names.count("all_gather")
            if world > 1 and (n_ar != 2 * layers or others or n_ag > 1):
                gathers = f", {n_ag} all-gathers" if n_ag else ""
                raise Fail(f"rank {r['rank']}'s decode step {j} called "
                           f"{len(names)} collectives ({n_ar} all-reduces{gathers}"
                           f"{', ' + ', '.join(others) if others else ''}); expected "
                           f"{2 * layers} all-reduces (one per attention and one per MLP "
                           f"block of {layers} layers) and at most one all-gather (a "
                           f"vocabulary-parallel head's logits) — nothing else needs the wire")
            ar = sum(c[2] for c in calls if c[0] == "all_reduce")
            ag = sum(c[2] for c in calls if c[0] == "all_gather")
            payloads.append(ar + ag)
            moved.append(2 * (world - 1) / world * ar + (world - 1) * ag)
    per_ar = 2 * (world - 1) / world * hidden * 4
    formula = per_ar * 2 * layers
    step_bytes = max(moved) if moved else 0.0
    msg = (f"W = {world}: each decode step all-reduced {max(payloads) if payloads else 0:.0f} "
           f"bytes of activations per rank and moved {step_bytes:.0f} bytes per rank per token; "
           f"formula 2(W-1)/W x hidden {hidden} x 4 B = {per_ar:.0f} B per all-reduce x "
           f"{2 * layers} all-reduces = {formula:.0f} B")
    return Verdict(True, msg, {"bytes_per_token": step_bytes, "formula_bytes": formula})
