"""Level 3 — the same attention over a paged KV cache read through block tables.

The layout is the paged-kv lab's: k_cache/v_cache [num_blocks, block_size, kv_heads, head_dim],
block_tables int32 [B, max_blocks] (rows padded past a sequence's blocks), context_lens int32.
Boundaries (block_size 16 unless said): lengths 1, exactly one block (16) and one more (17),
block 0 inside shuffled tables, tables padded with a block no sequence owns (all NaN), the last
block partly filled (its other slots NaN), two sequences sharing their first two blocks (a
shared prefix), block sizes 4 and 32, heads = KV heads in fp16, the largest GQA ratio (8 on 1),
scores of about ±120, bf16 (graded on CUDA; under the interpreter refused with the
reason), and a hidden seeded case. The speed case runs on CUDA only (speed.py).
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.decode_attention import inputs
from lab.exercises.decode_attention.grading import level2, speed
from lab.exercises.decode_attention.grading.common import (
    answered,
    attend,
    check_tensor,
    paged_tokens,
)
from lab.grader.api import Case, Verdict

NAN_HINT = ("every slot outside a sequence's own tokens holds NaN in this case (other "
            "sequences' slots, the padding block, the rest of a partly filled last block): a "
            "NaN here means a read outside them — read block_tables[b, j] for the j-th block "
            "(not j itself), address it as block * k_cache.stride(0), mask the last block's "
            "slots at context_len, and stop at cdiv(context_len, block_size) blocks")


def paged_case(cid: str, level: int, description: str, *, tables: list[list[int]],
               lens: list[int], seed: int, heads: int = 2, kv_heads: int = 1,
               block_size: int = 16, head_dim: int = 16, dtype: str = "float32",
               kind: str = "paged", **extra: Any) -> Case:
    num_blocks = max(b for row in tables for b in row) + 2  # the last one: padding, all NaN
    params = {"kind": kind, "seed": seed, "tables": tables, "lens": lens, "heads": heads,
              "kv_heads": kv_heads, "block_size": block_size, "head_dim": head_dim,
              "num_blocks": num_blocks, "dtype": dtype, **extra}
    blocks = sum(-(-n // block_size) for n in lens)
    return Case(id=cid, level=level, params=params, size=heads * (len(lens) + blocks),
                description=description, timeout_s=30.0, report=dtype == "bfloat16")


def random_tables(rng: random.Random, lens: list[int], block_size: int) -> list[list[int]]:
    need = [-(-n // block_size) for n in lens]
    ids = list(range(sum(need) + rng.randint(0, 3)))
    rng.shuffle(ids)
    tables, k = [], 0
    for n in need:
        tables.append(ids[k:k + n])
        k += n
    return tables


def cases(seed: int) -> list[Case]:
    rng = random.Random(f"decode-attention/3/{seed}")
    bs = rng.choice([4, 8, 16])
    lens = [rng.randint(1, 60) for _ in range(rng.randint(2, 3))]
    return [
        paged_case("lengths-1-16-17", 3, "lengths 1, exactly one block (16), one more (17); "
                   "block 0 inside shuffled tables, padding past them", tables=[[5], [0], [7, 3]],
                   lens=[1, 16, 17], seed=301),
        paged_case("shared-prefix-blocks", 3, "two sequences share their first two blocks (a "
                   "shared prefix), then each has its own last block", tables=[[2, 4, 1],
                   [2, 4, 6]], lens=[40, 35], seed=302),
        paged_case("block-size-4", 3, "block_size 4, a partly filled last block", tables=[[3, 0,
                   6], [5]], lens=[9, 3], seed=303, block_size=4),
        paged_case("block-size-32", 3, "block_size 32: one full block and one of 33 tokens",
                   tables=[[1], [0, 2]], lens=[32, 33], seed=304, block_size=32),
        paged_case("heads-equal-kv-heads-fp16", 3, "heads = kv_heads, fp16", tables=[[1, 3],
                   [0, 2]], lens=[20, 31], heads=2, kv_heads=2, head_dim=32, dtype="float16",
                   seed=305),
        paged_case("largest-gqa-ratio", 3, "8 query heads on 1 KV head", tables=[[2, 0, 1]],
                   lens=[33], heads=8, kv_heads=1, seed=306),
        paged_case("large-scores", 3, "scores of about ±120: a running max is needed",
                   tables=[[1, 0], [3, 2]], lens=[32, 30], heads=2, kv_heads=2, seed=307,
                   q_scale=40.0),
        paged_case("bf16", 3, "bfloat16 (graded on CUDA; refused under the interpreter)",
                   tables=[[1, 3], [0, 2]], lens=[20, 31], heads=4, kv_heads=2, dtype="bfloat16",
                   seed=308),
        paged_case(f"hidden-{seed}", 3, f"seeded: block_size {bs}, lengths {lens}",
                   tables=random_tables(rng, lens, bs), lens=lens, block_size=bs,
                   heads=4, kv_heads=rng.choice([1, 2, 4]), seed=rng.randrange(1 << 30),
                   dtype=rng.choice(["float32", "float16"])),
        speed.case(3, "paged"),
    ]


def sequences(p: dict[str, Any]) -> tuple[Any, list[Any], list[Any], float]:
    x = inputs.paged_inputs(p, "cpu")
    return x["q"], paged_tokens(x, "k_cache"), paged_tokens(x, "v_cache"), x["scale"]


def expected(case: Case) -> Any:
    q, keys, values, scale = sequences(case.params)
    return attend(q, keys, values, scale)


def variants(p: dict[str, Any]) -> dict[str, Any]:
    import torch

    x = inputs.paged_inputs(p, "cpu")
    q, keys, values, scale = sequences(p)
    out: dict[str, Any] = {}
    nb, bs_, kvh, D = x["k_cache"].shape
    flat_k, flat_v = x["k_cache"].reshape(nb * bs_, kvh, D), x["v_cache"].reshape(nb * bs_, kvh, D)
    tables = x["block_tables"].long()
    ignored, one_token = [], []
    for b, n in enumerate(int(m) for m in p["lens"]):
        t = torch.arange(n)
        ignored.append(t.clamp(max=nb * bs_ - 1))
        one_token.append((tables[b, t // bs_] + t % bs_).clamp(max=nb * bs_ - 1))
    out["the block table was ignored: logical block j was read as physical block j — read "
        "block_tables[b, j]"] = attend(q, [flat_k[i] for i in ignored],
                                       [flat_v[i] for i in ignored], scale)
    out["a physical block was addressed as block * k_stride_t (one token), not block * "
        "k_stride_blk (k_cache.stride(0))"] = attend(q, [flat_k[i] for i in one_token],
                                                     [flat_v[i] for i in one_token], scale)
    bs = int(p["block_size"])
    lens = [int(n) for n in p["lens"]]
    whole = [n - n % bs for n in lens]
    if all(w > 0 for w in whole) and whole != lens:
        out["the last, partly filled block was skipped: visit cdiv(context_len, block_size) "
            "blocks, not context_len // block_size"] = attend(
                q, [k[:w] for k, w in zip(keys, whole, strict=True)],
                [v[:w] for v, w in zip(values, whole, strict=True)], scale)
    return out | level2.variants(q, keys, values, scale)


def check(case: Case, got: Any, expected: Any) -> Verdict:
    if case.params["kind"] == "speed":
        return speed.check(case, got, expected)
    early = answered(case, got, "paged_decode_attention")
    if early is not None:
        return early
    p = case.params
    return check_tensor(case, got["out"], expected, what="paged_decode_attention",
                        dtype=p["dtype"], variants=lambda: variants(p),
                        nan_hint=level2.LARGE_HINT if "q_scale" in p else NAN_HINT)
