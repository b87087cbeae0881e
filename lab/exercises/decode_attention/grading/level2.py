"""Level 2 — single-query attention over a contiguous KV cache, online softmax.

Boundaries (the stub's launcher visits keys in tiles of BLOCK_N = 32): lengths 1, exactly one
tile (32), one more (33) and two tiles (64) in one batch, cache slots past each length holding
NaN (masked loads: K and V, not only the scores), heads = KV heads, the largest GQA ratio (8
query heads on one KV head), scores of about ±120 (the online softmax's running max), fp16
input, bf16 (graded on CUDA; under the interpreter refused with the
reason), and a hidden seeded case. The speed case runs on CUDA only (speed.py).
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.decode_attention import inputs
from lab.exercises.decode_attention.grading import speed
from lab.exercises.decode_attention.grading.common import (
    answered,
    attend,
    check_tensor,
    online,
)
from lab.grader.api import Case, Verdict

NAN_HINT = ("the cache slots past each sequence's length hold NaN in this case: a NaN here "
            "means a read past seq_len — mask the K and V loads (other=0.0), not only the "
            "scores (0 * NaN is NaN), and stop at seq_len, not seq_len + 1")
LARGE_HINT = ("scores here reach about ±120: exp overflows fp32 past 88.7 — keep a running max "
              "and take exp(score - max)")


def _case(cid: str, description: str, *, lens: list[int], heads: int, kv_heads: int,
          seed: int, head_dim: int = 16, dtype: str = "float32", **extra: Any) -> Case:
    params = {"kind": "attention", "seed": seed, "lens": lens, "heads": heads,
              "kv_heads": kv_heads, "head_dim": head_dim, "dtype": dtype, **extra}
    return Case(id=cid, level=2, params=params, size=heads * (len(lens) + sum(lens) // 32),
                description=description, timeout_s=30.0, report=dtype == "bfloat16")


def cases(seed: int) -> list[Case]:
    rng = random.Random(f"decode-attention/2/{seed}")
    heads, kv = rng.choice([(4, 2), (4, 1), (2, 2), (6, 3)])
    return [
        _case("lengths-1-32-33-64", "lengths 1, exactly one tile (32), one more (33), two "
              "tiles (64); NaN past each length", lens=[1, 32, 33, 64], heads=2, kv_heads=1,
              seed=201, max_len=70),
        _case("heads-equal-kv-heads", "heads = kv_heads (multi-head attention)", lens=[5, 40],
              heads=2, kv_heads=2, head_dim=32, seed=202),
        _case("largest-gqa-ratio", "8 query heads on 1 KV head (GQA ratio 8)", lens=[20],
              heads=8, kv_heads=1, seed=203),
        _case("large-scores", "scores of about ±120: a running max is needed", lens=[50, 50],
              heads=2, kv_heads=2, seed=204, q_scale=40.0),
        _case("fp16", "fp16 q, k, v: fp32 accumulation, fp16 output", lens=[7, 45], heads=4,
              kv_heads=2, head_dim=32, seed=205, dtype="float16"),
        _case("bf16", "bfloat16 (graded on CUDA; refused under the interpreter)",
              lens=[7, 45], heads=4, kv_heads=2, head_dim=32, seed=206, dtype="bfloat16"),
        _case(f"hidden-{seed}", f"seeded: {heads} heads on {kv} KV heads",
              lens=[rng.randint(1, 70) for _ in range(rng.randint(2, 3))], heads=heads,
              kv_heads=kv, seed=rng.randrange(1 << 30), dtype=rng.choice(["float32", "float16"]),
              max_len=72),
        speed.case(2, "contiguous"),
    ]


def _sequences(p: dict[str, Any]) -> tuple[Any, list[Any], list[Any], float]:
    x = inputs.contiguous_inputs(p, "cpu")
    lens = [int(n) for n in p["lens"]]
    return (x["q"], [x["k"][b, :n] for b, n in enumerate(lens)],
            [x["v"][b, :n] for b, n in enumerate(lens)], x["scale"])


def expected(case: Case) -> Any:
    q, keys, values, scale = _sequences(case.params)
    return attend(q, keys, values, scale)


def variants(q: Any, keys: list[Any], values: list[Any], scale: float) -> dict[str, Any]:
    """Outputs of known mistakes on these inputs (float64): what a wrong output is matched to."""
    D = q.shape[-1]
    out = {
        "the scores were not multiplied by scale (1/sqrt(head_dim))":
            attend(q, keys, values, 1.0),
        "the scores were multiplied by sqrt(head_dim) instead of 1/sqrt(head_dim)":
            attend(q, keys, values, float(D) ** 0.5),
        "GQA heads tiled: query head h read KV head h % kv_heads — it reads h // (heads // "
        "kv_heads)": attend(q, keys, values, scale, tiled_heads=True),
    }
    for block in (16, 32, 64, 128):
        out[f"only the first tile ({block} tokens) was attended to: loop over every tile up "
            "to seq_len"] = attend(q, [k[:block] for k in keys], [v[:block] for v in values],
                                   scale)
        out[f"online softmax: the accumulator was not rescaled by exp(m_old - m_new) when the "
            f"running max grew (tiles of {block})"] = online(q, keys, values, scale, block,
                                                             rescale_acc=False)
        out[f"online softmax: the running sum was not rescaled by exp(m_old - m_new) when the "
            f"running max grew (tiles of {block})"] = online(q, keys, values, scale, block,
                                                             rescale_sum=False)
    out["the newest token was left out (attend to positions < seq_len, all of them)"] = (
        attend(q, [k[:-1] for k in keys], [v[:-1] for v in values], scale)
        if all(len(k) > 1 for k in keys) else None)
    return out


def check(case: Case, got: Any, expected: Any) -> Verdict:
    if case.params["kind"] == "speed":
        return speed.check(case, got, expected)
    early = answered(case, got, "decode_attention")
    if early is not None:
        return early
    p = case.params
    return check_tensor(case, got["out"], expected, what="decode_attention", dtype=p["dtype"],
                        variants=lambda: variants(*_sequences(p)),
                        nan_hint=LARGE_HINT if "q_scale" in p else NAN_HINT)
