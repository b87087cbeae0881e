"""kv-bytes level 1: `kv_bytes_per_token` on known models, edge configs and seeded configs.

A wrong answer is reported with the rule a known wrong variant of the formula reproduces (no
factor 2, query heads instead of KV heads, ignoring an explicit head_dim, fractional int4 bytes,
the wrong bit width).
"""

from __future__ import annotations

import random

from lab.exercises.kv_bytes.grading.common import (
    BITS,
    FALCON_7B,
    GEMMA_7B,
    LLAMA2_7B,
    LLAMA3_8B,
    LLAMA3_70B,
    bpt,
    named,
    random_config,
    variant,
)
from lab.grader.api import Case


def cases(seed: int) -> list[Case]:
    return _fixed() + _hidden(seed)


def _fixed() -> list[Case]:
    mqa_tiny = {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 8}
    return [
        named(bpt(mqa_tiny, "fp16"), "tiny-one-layer", "1 layer, 1 head, head_dim 8, fp16"),
        named(bpt(LLAMA2_7B, "fp16"), "llama2-7b-mha-fp16",
              "MHA: no num_key_value_heads key"),
        named(bpt({**LLAMA2_7B, "num_key_value_heads": None}, "float16"),
              "kv-heads-none-is-mha", "num_key_value_heads = None means MHA"),
        named(bpt(LLAMA3_8B, "bf16"), "llama3-8b-gqa-bf16", "GQA: 32 query heads, 8 KV heads"),
        named(bpt(FALCON_7B, "bfloat16"), "falcon-7b-mqa", "MQA: one KV head, 71 query heads"),
        named(bpt(GEMMA_7B, "bf16"), "gemma-7b-explicit-head-dim",
              "head_dim 256 set explicitly (hidden_size / heads would be 192)"),
        named(bpt(LLAMA3_70B, "fp32"), "llama3-70b-fp32", "float32: 4 bytes per value"),
        named(bpt(LLAMA3_70B, "float8_e4m3fn"), "llama3-70b-fp8-e4m3", "fp8: 1 byte per value"),
        named(bpt(LLAMA3_8B, "int4"), "llama3-8b-int4", "int4: two values per byte"),
        named(bpt({"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
                     "hidden_size": 20, "head_dim": 5}, "int4"),
               "int4-odd-head-dim", "int4 with head_dim 5: each vector rounds up to 3 bytes"),
        named(bpt(LLAMA3_8B, "float64"), "unknown-dtype", "float64 is not in the table"),
        named(bpt({**LLAMA3_8B, "num_key_value_heads": 6}, "bf16"), "kv-heads-not-dividing",
              "32 query heads cannot share 6 KV heads evenly"),
        named(bpt({"num_hidden_layers": 2, "num_attention_heads": 12, "hidden_size": 1000},
                  "fp16"), "indivisible-hidden-size", "hidden_size 1000 / 12 heads, no head_dim"),
        named(bpt({**LLAMA3_8B, "num_hidden_layers": 0}, "bf16"), "zero-layers",
              "num_hidden_layers = 0 is invalid"),
        named(bpt({**LLAMA3_8B, "num_key_value_heads": 0}, "bf16"), "zero-kv-heads",
              "num_key_value_heads = 0 is invalid (not 'unset': that is a missing key or None)"),
        named(bpt({**GEMMA_7B, "head_dim": 0}, "bf16"), "zero-head-dim",
              "head_dim = 0 is invalid (not 'unset': that is a missing key or None)"),
        named(bpt({"num_hidden_layers": 2, "num_attention_heads": 12, "hidden_size": 1000,
                     "head_dim": 64}, "fp16"), "explicit-head-dim-indivisible-hidden",
               "head_dim 64 set, hidden_size 1000 / 12 heads does not divide: valid, the "
               "divisibility rule applies only when head_dim is derived"),
        # every field on each side of its bound, every element of the dtype table
        named(bpt({**LLAMA3_8B, "num_hidden_layers": -1}, "bf16"), "negative-layers",
              "num_hidden_layers = -1 is invalid"),
        named(bpt({**LLAMA3_8B, "num_hidden_layers": 32.0}, "bf16"), "float-layers",
              "num_hidden_layers = 32.0 is not an int: invalid"),
        named(bpt({**LLAMA2_7B, "num_attention_heads": 0}, "fp16"), "zero-attention-heads",
              "num_attention_heads = 0 is invalid (MHA: no KV-head key)"),
        named(bpt({**LLAMA2_7B, "hidden_size": 0}, "fp16"), "zero-hidden-size",
              "hidden_size = 0 with head_dim derived is invalid"),
        named(bpt({**LLAMA3_8B, "num_key_value_heads": 64}, "bf16"), "more-kv-than-query-heads",
              "64 KV heads for 32 query heads: 32 is not a multiple of 64"),
        named(bpt({**LLAMA3_8B, "num_key_value_heads": 32}, "bf16"), "kv-heads-equal-heads",
              "num_key_value_heads = num_attention_heads (the largest valid value): MHA"),
        *[named(bpt(LLAMA3_8B, name), f"dtype-{name}", f"dtype {name!r} is in the table")
          for name in ("float32", "half", "float8_e5m2", "fp8", "float16", "fp16", "bfloat16")],
        named(bpt(LLAMA3_8B, "FP16"), "dtype-upper-case", "'FP16' is not a name in the table "
              "(names are exact)"),
    ]


def _hidden(seed: int, n: int = 24) -> list[Case]:
    rng = random.Random(f"kv-bytes/1/{seed}")
    out = []
    for i in range(n):
        config = random_config(rng)
        dtype = rng.choice(sorted(BITS))
        case = bpt(config, dtype)
        out.append(named(case, f"hidden-{i:02d}", f"seeded config, {dtype}"))
    return out


BPT_BUGS = [
    ("no_kv_pair", "you counted only K or only V — the cache stores both (factor 2)"),
    ("query_heads", "you used num_attention_heads; K/V are stored per KV head "
                    "(num_key_value_heads: GQA/MQA share them across query heads)"),
    ("ignore_head_dim", "the config sets head_dim explicitly — use it instead of "
                        "hidden_size // num_attention_heads"),
    ("fractional", "each head's vector occupies whole bytes: ceil(head_dim · bits / 8) "
                   "(int4 packs two values per byte, rounding up)"),
    ("ignore_tp", "under tensor parallelism kv_bytes_per_token is per GPU: "
                  "kv_heads / tp heads (or one replicated head) per GPU"),
]



def diagnose(case: Case, got: object, want: object) -> str:
    """The rule a wrong answer most likely missed ('' if no known mistake explains it).

    A variant that happens to give the right answer on this input explains nothing, so it is
    skipped.
    """
    args = case.params["args"]

    def explains(v: float | None) -> bool:
        return v is not None and v != want and got == v

    for bug, why in BPT_BUGS:
        if explains(variant(args, **{bug: True})):
            return why
    dtype = args.get("dtype")
    for bits in (32, 16, 8, 4):
        if dtype in BITS and bits != BITS[dtype] and explains(variant(args, bits=bits)):
            return f"{dtype!r} has {BITS[dtype]} bits per value; you used {bits}"
    return ""
