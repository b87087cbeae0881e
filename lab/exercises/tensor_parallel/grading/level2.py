"""Level 2 — a tensor-parallel MLP and attention with heads split across ranks.

Boundaries and feature pairs:
- MLP (SwiGLU) at W = 1, 2, 4: output equal to the single-process MLP, exactly one all-reduce
  per block and nothing else (gate/up column-parallel without a gather, down row-parallel);
- head_plan: KV heads divisible by W (8/4 at W = 2: split), W > KV heads (8/2 at W = 4:
  replicated, uniform), W not dividing KV heads nor they W (6/3 at W = 2: replicated, ranks
  share KV head 1), MQA (8/1 at W = 4), MHA (8/8 at W = 4), W = 1, and a refusal (6 heads at
  W = 4: ValueError);
- attention on the same head layouts, positions starting at 0 and past it (RoPE uses the
  positions handed in), causal: one all-reduce per block, output equal to the dense layer.
"""

from __future__ import annotations

from typing import Any

from lab.exercises.tensor_parallel import runtime
from lab.exercises.tensor_parallel.grading.common import (
    Fail,
    close,
    expect_collectives,
    ranks_ok,
)
from lab.grader.api import Case

PLAN_CALLS = [(8, 4, 2, 0), (8, 4, 2, 1), (8, 2, 4, 0), (8, 2, 4, 3), (6, 3, 2, 0),
              (6, 3, 2, 1), (8, 1, 4, 2), (8, 8, 4, 1), (8, 4, 1, 0), (6, 6, 4, 0)]
# the split's comparison (W divides the KV heads) exactly on it - KV heads == W: one KV head per
# rank, split, nothing replicated - and just past it (fewer KV heads than ranks: replicated)
PLAN_KV_EQ_WORLD = [(8, 4, 4, r) for r in range(4)] + [(4, 2, 2, 0), (4, 2, 2, 1)]
PLAN_KV_BELOW_WORLD = [(8, 4, 8, r) for r in (0, 1, 6, 7)] + [(6, 2, 3, r) for r in range(3)]


def cases(seed: int) -> list[Case]:
    s = seed % 100_000

    def mlp(cid: str, world: int, hidden: int, inter: int, k: int) -> Case:
        return Case(cid, 2, {"kind": "mlp", "world": world, "hidden": hidden, "inter": inter,
                             "rows": 3, "seed": s + k},
                    size=10 * world, timeout_s=20.0,
                    description=f"SwiGLU MLP at W = {world}: one all-reduce")

    def attn(cid: str, world: int, heads: int, kv: int, start: int, k: int) -> Case:
        return Case(cid, 2, {"kind": "attention", "world": world, "heads": heads,
                             "kv_heads": kv, "head_dim": 4, "hidden": 16, "tokens": 5,
                             "start": start, "seed": s + k},
                    size=20 + 10 * world, timeout_s=20.0,
                    description=f"attention, {heads} heads / {kv} KV heads at W = {world}, "
                                f"positions from {start}")

    return [
        Case("head-plan", 2, {"kind": "plan", "calls": [list(c) for c in PLAN_CALLS]},
             size=0, description="head_plan: split, replicated, MQA, MHA, W = 1, refused"),
        Case("head-plan-kv-eq-world", 2, {"kind": "plan",
                                          "calls": [list(c) for c in PLAN_KV_EQ_WORLD]},
             size=0, description="KV heads == W: one KV head per rank, split, not replicated"),
        Case("head-plan-kv-below-world", 2, {"kind": "plan",
                                             "calls": [list(c) for c in PLAN_KV_BELOW_WORLD]},
             size=0, description="KV heads < W: each KV head on several ranks, replicated"),
        mlp("mlp-w1", 1, 8, 12, 1),
        mlp("mlp-w2", 2, 16, 24, 2),
        mlp("mlp-w4", 4, 8, 32, 3),
        attn("attn-split-w2", 2, 8, 4, 0, 4),
        attn("attn-kv-eq-w2", 2, 8, 2, 1, 9),
        attn("attn-replicated-w4", 4, 8, 2, 3, 5),
        attn("attn-replicated-uneven-w2", 2, 6, 3, 2, 6),
        attn("attn-mqa-w4", 4, 8, 1, 1, 7),
        attn("attn-mha-w4", 4, 4, 4, 0, 8),
    ]


def plan(heads: int, kv: int, world: int, rank: int) -> dict[str, Any] | None:
    """The expected plan, or None where the split must be refused."""
    if heads % world or heads % kv:
        return None
    per, group = heads // world, heads // kv
    q = list(range(rank * per, (rank + 1) * per))
    if kv % world == 0:
        k = kv // world
        return {"q_heads": q, "kv_heads": list(range(rank * k, (rank + 1) * k)),
                "replicated": False}
    return {"q_heads": q, "kv_heads": sorted({h // group for h in q}), "replicated": True}


def expected(case: Case) -> Any:
    p = case.params
    if p["kind"] == "plan":
        return [plan(*c) for c in p["calls"]]
    if p["kind"] == "mlp":
        import torch.nn.functional as F

        inp = runtime.mlp_inputs(p)
        x = inp["x"]
        return F.linear(F.silu(F.linear(x, inp["gate"])) * F.linear(x, inp["up"]), inp["down"])
    return runtime.dense_attention(runtime.attention_inputs(p), p)


def check(case: Case, got: Any, want: Any) -> None:
    p = case.params
    if p["kind"] == "plan":
        _check_plans(p, got, want)
        return
    ranks = ranks_ok(got, p["world"])
    what = "MLP" if p["kind"] == "mlp" else "attention"
    for r in ranks:
        close(r["value"]["out"], want, f"rank {r['rank']}'s {what} output", _hint(p, r, want))
    expect_collectives(ranks, p["world"], {"all_reduce": 1}, f"{what} block",
                       "column-parallel in (no gather: the next layer wants the slice), "
                       "row-parallel out: one all-reduce per block")


def _hint(p: dict[str, Any], r: dict[str, Any], want: Any) -> str:
    import torch

    out = r["value"]["out"]
    if not isinstance(out, torch.Tensor) or out.shape != want.shape:
        return ""
    w = p["world"]
    if w > 1 and torch.allclose(out, want * w, rtol=1e-4, atol=1e-4):
        return f"the output is {w}x the single-process one: the partial sums were reduced twice"
    if p["kind"] == "attention":
        inp = runtime.attention_inputs(p)
        if torch.allclose(out, _unmasked(inp, p), rtol=1e-4, atol=1e-4):
            return "this is attention without the causal mask: token i attends to tokens <= i"
        return ("each rank attends with its own query heads over the KV heads they read "
                "(query head h reads KV head h // (heads / kv_heads), found at its position "
                "in this rank's kv_heads), RoPE at the positions handed in, causal mask, "
                "then o_proj's columns for those heads")
    return ""


def _unmasked(inp: dict[str, Any], p: dict[str, Any]) -> Any:
    """The dense layer without its causal mask (to name that bug)."""
    import torch.nn.functional as F

    t, d = p["tokens"], p["head_dim"]
    x, pos = inp["x"], inp["positions"]
    q = runtime.rope(F.linear(x, inp["q"]).view(t, -1, d), pos).transpose(0, 1)
    k = runtime.rope(F.linear(x, inp["k"]).view(t, -1, d), pos).transpose(0, 1)
    v = F.linear(x, inp["v"]).view(t, -1, d).transpose(0, 1)
    rep = p["heads"] // p["kv_heads"]
    out = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 0),
                                         v.repeat_interleave(rep, 0))
    return F.linear(out.transpose(0, 1).reshape(t, -1), inp["o"])


def _check_plans(p: dict[str, Any], got: Any, want: list[Any]) -> None:
    if not isinstance(got, list) or len(got) != len(want):
        raise Fail(f"expected {len(want)} head plans, got {str(got)[:200]}")
    for (heads, kv, world, rank), g, w in zip(p["calls"], got, want, strict=True):
        call = f"head_plan({heads}, {kv}, world_size={world}, rank={rank})"
        if "unexpected" in g:
            raise Fail(f"{call}: {g['unexpected']}")
        if w is None:
            if "raised" not in g:
                raise Fail(f"{call} returned {g}; {heads} query heads do not split over "
                           f"{world} ranks: raise ValueError")
            if g["raised"][0] != "ValueError":
                raise Fail(f"{call} raised {g['raised'][0]}; expected ValueError")
            continue
        if "raised" in g:
            raise Fail(f"{call} raised {g['raised'][0]}: {g['raised'][1]} — this split is "
                       f"valid (expected {w})")
        if g["q_heads"] != w["q_heads"]:
            raise Fail(f"{call}: query heads {g['q_heads']}, expected {w['q_heads']} "
                       f"(contiguous blocks of heads / W, rank 0 first)")
        if g["kv_heads"] != w["kv_heads"]:
            why = ("W divides the KV heads: split them like the query heads" if not
                   w["replicated"] else f"{world} does not divide {kv} KV heads: keep the KV "
                   f"heads this rank's query heads read (query head h reads KV head "
                   f"h // {heads // kv})")
            raise Fail(f"{call}: KV heads {g['kv_heads']}, expected {w['kv_heads']} — {why}")
        if g["replicated"] and not w["replicated"]:
            raise Fail(f"{call}: replicated=True, expected False — W = {world} divides "
                       f"{kv} KV heads (equal counts included: one KV head per rank), so each "
                       f"KV head lives on exactly one rank")
        if g["replicated"] != w["replicated"]:
            raise Fail(f"{call}: replicated={g['replicated']}, expected {w['replicated']} — "
                       f"say so when KV heads are held by more than one rank")
        if w["replicated"] and not g["note"]:
            raise Fail(f"{call}: KV heads are replicated but the plan's 'note' is empty — "
                       f"say so (what is replicated and why)")
