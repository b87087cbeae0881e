"""Grading spec for `kv-bytes` (parent side): fixed edge cases, seeded hidden cases, diagnosing
checks. `drive.py` calls the learner's function in the sandbox; everything here runs in the
grader's process only.

The checks recompute a few *wrong* variants of the formula (no factor 2, query heads instead of
KV heads, ignoring an explicit head_dim, fractional int4 bytes, no block rounding, ...) so a wrong
answer is reported with the rule it most likely missed. This module never imports the reference.
"""

from __future__ import annotations

import random
from typing import Any

from lab.grader.api import Case, Verdict

REFERENCE = "lab.reference.kv_bytes"

GiB = 1 << 30
CASE_TIMEOUT_S = 5.0  # pure arithmetic: anything slower is a loop
BITS = {
    "float32": 32, "fp32": 32, "bfloat16": 16, "bf16": 16, "float16": 16, "fp16": 16,
    "half": 16, "float8_e4m3fn": 8, "float8_e5m2": 8, "fp8": 8, "int4": 4,
}

LLAMA2_7B = {"num_hidden_layers": 32, "num_attention_heads": 32, "hidden_size": 4096}
LLAMA3_8B = {**LLAMA2_7B, "num_key_value_heads": 8}
LLAMA3_70B = {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
              "hidden_size": 8192}
FALCON_7B = {"num_hidden_layers": 32, "num_attention_heads": 71, "num_key_value_heads": 1,
             "hidden_size": 4544}
GEMMA_7B = {"num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16,
            "hidden_size": 3072, "head_dim": 256}


def _size(config: dict[str, Any]) -> int:
    """How big a config is (used to show the smallest failing case first)."""
    layers = config.get("num_hidden_layers") or 1
    heads = config.get("num_attention_heads") or 1
    kv = config.get("num_key_value_heads") or heads
    hd = config.get("head_dim") or max(1, (config.get("hidden_size") or 1) // max(1, heads))
    try:  # invalid counts (0, negative) size as 1: an invalid case is never "smaller" than 1
        return max(1, int(layers)) * max(1, int(kv)) * max(1, int(hd))
    except (TypeError, ValueError):
        return 0


def _bpt(config: dict[str, Any], dtype: str, **kw: Any) -> Case:
    return Case(
        id="", level=1, params={"function": "kv_bytes_per_token",
                                "args": {"config": config, "dtype": dtype, **kw}},
        size=_size(config),
    )


def _named(case: Case, case_id: str, description: str, level: int = 1) -> Case:
    return Case(id=case_id, level=level, params=case.params, size=case.size,
                description=description, timeout_s=CASE_TIMEOUT_S)


def _capacity(function: str, config: dict[str, Any], dtype: str, **kw: Any) -> Case:
    args = {"config": config, "dtype": dtype, **kw}
    size = _size(config) * int(kw.get("context_len", kw.get("num_seqs", 1)) or 1)
    return Case(id="", level=2, params={"function": function, "args": args}, size=size)


def _level1_fixed() -> list[Case]:
    mqa_tiny = {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 8}
    return [
        _named(_bpt(mqa_tiny, "fp16"), "tiny-one-layer", "1 layer, 1 head, head_dim 8, fp16"),
        _named(_bpt(LLAMA2_7B, "fp16"), "llama2-7b-mha-fp16",
               "MHA: no num_key_value_heads key"),
        _named(_bpt({**LLAMA2_7B, "num_key_value_heads": None}, "float16"),
               "kv-heads-none-is-mha", "num_key_value_heads = None means MHA"),
        _named(_bpt(LLAMA3_8B, "bf16"), "llama3-8b-gqa-bf16", "GQA: 32 query heads, 8 KV heads"),
        _named(_bpt(FALCON_7B, "bfloat16"), "falcon-7b-mqa", "MQA: one KV head, 71 query heads"),
        _named(_bpt(GEMMA_7B, "bf16"), "gemma-7b-explicit-head-dim",
               "head_dim 256 set explicitly (hidden_size / heads would be 192)"),
        _named(_bpt(LLAMA3_70B, "fp32"), "llama3-70b-fp32", "float32: 4 bytes per value"),
        _named(_bpt(LLAMA3_70B, "float8_e4m3fn"), "llama3-70b-fp8-e4m3", "fp8: 1 byte per value"),
        _named(_bpt(LLAMA3_8B, "int4"), "llama3-8b-int4", "int4: two values per byte"),
        _named(_bpt({"num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
                     "hidden_size": 20, "head_dim": 5}, "int4"),
               "int4-odd-head-dim", "int4 with head_dim 5: each vector rounds up to 3 bytes"),
        _named(_bpt(LLAMA3_8B, "float64"), "unknown-dtype", "float64 is not in the table"),
        _named(_bpt({**LLAMA3_8B, "num_key_value_heads": 6}, "bf16"), "kv-heads-not-dividing",
               "32 query heads cannot share 6 KV heads evenly"),
        _named(_bpt({"num_hidden_layers": 2, "num_attention_heads": 12, "hidden_size": 1000},
                    "fp16"), "indivisible-hidden-size", "hidden_size 1000 / 12 heads, no head_dim"),
        _named(_bpt({**LLAMA3_8B, "num_hidden_layers": 0}, "bf16"), "zero-layers",
               "num_hidden_layers = 0 is invalid"),
        _named(_bpt({**LLAMA3_8B, "num_key_value_heads": 0}, "bf16"), "zero-kv-heads",
               "num_key_value_heads = 0 is invalid (not 'unset': that is a missing key or None)"),
        _named(_bpt({**GEMMA_7B, "head_dim": 0}, "bf16"), "zero-head-dim",
               "head_dim = 0 is invalid (not 'unset': that is a missing key or None)"),
        _named(_bpt({"num_hidden_layers": 2, "num_attention_heads": 12, "hidden_size": 1000,
                     "head_dim": 64}, "fp16"), "explicit-head-dim-indivisible-hidden",
               "head_dim 64 set, hidden_size 1000 / 12 heads does not divide: valid, the "
               "divisibility rule applies only when head_dim is derived"),
        # every field on each side of its bound, every element of the dtype table
        _named(_bpt({**LLAMA3_8B, "num_hidden_layers": -1}, "bf16"), "negative-layers",
               "num_hidden_layers = -1 is invalid"),
        _named(_bpt({**LLAMA3_8B, "num_hidden_layers": 32.0}, "bf16"), "float-layers",
               "num_hidden_layers = 32.0 is not an int: invalid"),
        _named(_bpt({**LLAMA2_7B, "num_attention_heads": 0}, "fp16"), "zero-attention-heads",
               "num_attention_heads = 0 is invalid (MHA: no KV-head key)"),
        _named(_bpt({**LLAMA2_7B, "hidden_size": 0}, "fp16"), "zero-hidden-size",
               "hidden_size = 0 with head_dim derived is invalid"),
        _named(_bpt({**LLAMA3_8B, "num_key_value_heads": 64}, "bf16"), "more-kv-than-query-heads",
               "64 KV heads for 32 query heads: 32 is not a multiple of 64"),
        _named(_bpt({**LLAMA3_8B, "num_key_value_heads": 32}, "bf16"), "kv-heads-equal-heads",
               "num_key_value_heads = num_attention_heads (the largest valid value): MHA"),
        *[_named(_bpt(LLAMA3_8B, name), f"dtype-{name}", f"dtype {name!r} is in the table")
          for name in ("float32", "half", "float8_e5m2", "fp8", "float16", "fp16", "bfloat16")],
        _named(_bpt(LLAMA3_8B, "FP16"), "dtype-upper-case", "'FP16' is not a name in the table "
               "(names are exact)"),
    ]


def _random_config(rng: random.Random) -> dict[str, Any]:
    kv = rng.choice([1, 1, 2, 4, 8, 8, 16, 32])
    group = rng.choice([1, 1, 2, 4, 8])
    heads = kv * group
    head_dim = rng.choice([64, 80, 96, 112, 128, 128, 160, 256, rng.randint(1, 33)])
    config: dict[str, Any] = {"num_hidden_layers": rng.randint(1, 126),
                              "num_attention_heads": heads}
    style = rng.random()
    if style < 0.25:  # explicit head_dim that disagrees with hidden_size / heads
        config["hidden_size"] = heads * rng.choice([64, 128, 192])
        config["head_dim"] = head_dim
    else:
        config["hidden_size"] = heads * head_dim
        if rng.random() < 0.3:
            config["head_dim"] = head_dim
    if group > 1 or rng.random() < 0.6:
        config["num_key_value_heads"] = kv
    return config


def _level1_hidden(seed: int, n: int = 24) -> list[Case]:
    rng = random.Random(f"kv-bytes/1/{seed}")
    out = []
    for i in range(n):
        config = _random_config(rng)
        dtype = rng.choice(sorted(BITS))
        case = _bpt(config, dtype)
        out.append(_named(case, f"hidden-{i:02d}", f"seeded config, {dtype}"))
    return out


def _level2_fixed() -> list[Case]:
    h100 = 80 * GiB
    w8b = 16_060_000_000
    tiny = {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 8}  # 32 B/token fp16
    specs: list[tuple[str, str, Case]] = [
        ("one-block-exactly", "free memory is exactly one block of 16 tokens",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=1000 + 16 * 32,
                   weight_bytes=600, reserve_bytes=400, context_len=16)),
        ("one-byte-short", "one byte less than a block: nothing fits",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=1000 + 16 * 32 - 1,
                   weight_bytes=600, reserve_bytes=400, context_len=16)),
        ("partial-block", "17 tokens need 2 blocks of 16",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                   weight_bytes=0, reserve_bytes=0, context_len=17)),
        ("block-size-1", "block_size 1: no paging waste",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                   weight_bytes=0, reserve_bytes=0, context_len=17, block_size=1)),
        ("llama3-8b-h100-8k", "Llama-3-8B bf16 on 80 GiB, 4 GiB reserve, 8k context",
         _capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                   weight_bytes=w8b, reserve_bytes=4 * GiB, context_len=8192)),
        ("llama2-7b-mha-24g", "MHA eats memory: Llama-2-7B fp16 on 24 GiB at 4k",
         _capacity("max_concurrent_seqs", LLAMA2_7B, "fp16", gpu_mem_bytes=24 * GiB,
                   weight_bytes=13_500_000_000, reserve_bytes=2 * GiB, context_len=4096)),
        ("weights-do-not-fit", "weights larger than the GPU: 0 sequences",
         _capacity("max_concurrent_seqs", LLAMA3_70B, "bf16", gpu_mem_bytes=h100,
                   weight_bytes=141_000_000_000, reserve_bytes=4 * GiB, context_len=4096)),
        ("reserve-eats-everything", "weights + reserve exactly fill the GPU: max context 0",
         _capacity("max_context_len", LLAMA3_8B, "bf16", gpu_mem_bytes=20 * GiB,
                   weight_bytes=16 * GiB, reserve_bytes=4 * GiB, num_seqs=1)),
        ("max-context-llama3-8b", "longest context for 64 concurrent sequences",
         _capacity("max_context_len", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                   weight_bytes=w8b, reserve_bytes=4 * GiB, num_seqs=64)),
        ("more-seqs-than-blocks", "more sequences than blocks: max context 0",
         _capacity("max_context_len", tiny, "fp16", gpu_mem_bytes=3 * 16 * 32,
                   weight_bytes=0, reserve_bytes=0, num_seqs=4)),
        ("tp2-splits-kv-heads", "Llama-3-70B on 2 GPUs: 4 KV heads and half the weights each",
         _capacity("max_concurrent_seqs", LLAMA3_70B, "bf16", gpu_mem_bytes=h100,
                   weight_bytes=141_000_000_000, reserve_bytes=4 * GiB, context_len=4096,
                   tensor_parallel=2)),
        ("tp8-replicates-kv-heads", "8 GPUs, 2 KV heads: each GPU keeps one replicated head",
         _capacity("max_context_len", {**LLAMA3_8B, "num_key_value_heads": 2}, "fp8",
                   gpu_mem_bytes=h100, weight_bytes=w8b, reserve_bytes=4 * GiB, num_seqs=32,
                   tensor_parallel=8)),
        ("bytes-per-token-tp4", "kv_bytes_per_token is per GPU under tensor parallelism",
         Case(id="", level=2, size=_size(LLAMA3_70B),
              params={"function": "kv_bytes_per_token",
                      "args": {"config": LLAMA3_70B, "dtype": "bf16", "tensor_parallel": 4}})),
        ("tp-does-not-divide", "8 KV heads cannot be split over 3 GPUs",
         _capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                   weight_bytes=w8b, reserve_bytes=0, context_len=1024, tensor_parallel=3)),
        ("tp-does-not-replicate", "4 KV heads cannot be replicated over 6 GPUs (6 is not a "
         "multiple of 4)",
         _capacity("max_concurrent_seqs", {**LLAMA2_7B, "num_key_value_heads": 4}, "bf16",
                   gpu_mem_bytes=h100, weight_bytes=w8b, reserve_bytes=0, context_len=1024,
                   tensor_parallel=6)),
        ("weights-split-rounds-up", "3 bytes of weights on 2 GPUs: each holds ceil(3 / 2) = 2, "
         "leaving one byte short of a block",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=2 + 16 * 32 - 1,
                   weight_bytes=3, reserve_bytes=0, context_len=16, tensor_parallel=2)),
        ("zero-context", "context_len 0 is invalid",
         _capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                   weight_bytes=w8b, reserve_bytes=0, context_len=0)),
        ("int4-seats-32k", "int4 cache at 32k context",
         _capacity("max_concurrent_seqs", LLAMA3_8B, "int4", gpu_mem_bytes=h100,
                   weight_bytes=w8b, reserve_bytes=4 * GiB, context_len=32768)),
        # every parameter on each side of its bound
        ("context-one", "context_len 1 (the minimum): one block per sequence",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                   weight_bytes=0, reserve_bytes=0, context_len=1)),
        ("zero-seqs", "num_seqs 0 is invalid",
         _capacity("max_context_len", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                   weight_bytes=0, reserve_bytes=0, num_seqs=0)),
        ("one-seq", "num_seqs 1 (the minimum): every block to one sequence",
         _capacity("max_context_len", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32 + 31,
                   weight_bytes=0, reserve_bytes=0, num_seqs=1)),
        ("zero-block-size", "block_size 0 is invalid",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                   weight_bytes=0, reserve_bytes=0, context_len=16, block_size=0)),
        ("zero-tp", "tensor_parallel 0 is invalid",
         _capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                   weight_bytes=w8b, reserve_bytes=0, context_len=1024, tensor_parallel=0)),
        ("tp-equals-kv-heads", "tensor_parallel = KV heads (8): one head per GPU, no replica",
         _capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                   weight_bytes=w8b, reserve_bytes=0, context_len=1024, tensor_parallel=8)),
        ("negative-gpu-mem", "gpu_mem_bytes -1 is invalid",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=-1,
                   weight_bytes=0, reserve_bytes=0, context_len=16)),
        ("negative-weights", "weight_bytes -1 is invalid (it would add memory)",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                   weight_bytes=-1, reserve_bytes=0, context_len=16)),
        ("negative-reserve", "reserve_bytes -1 is invalid (it would add memory)",
         _capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                   weight_bytes=0, reserve_bytes=-1, context_len=16)),
        ("zero-memory", "gpu_mem_bytes 0 (valid, the minimum): nothing fits",
         _capacity("max_context_len", tiny, "fp16", gpu_mem_bytes=0,
                   weight_bytes=0, reserve_bytes=0, num_seqs=1)),
    ]
    return [_named(case, cid, desc, level=2) for cid, desc, case in specs]


def _level2_hidden(seed: int, n: int = 24) -> list[Case]:
    rng = random.Random(f"kv-bytes/2/{seed}")
    out = []
    for i in range(n):
        config = _random_config(rng)
        kv = config.get("num_key_value_heads") or config["num_attention_heads"]
        tp_choices = [1, 1, 2, 4, 8]
        tp = rng.choice([t for t in tp_choices if t % kv == 0 or kv % t == 0])
        dtype = rng.choice(sorted(BITS))
        gpu = rng.choice([16, 24, 40, 48, 80, 141]) * GiB + rng.randint(0, 999)
        kw: dict[str, Any] = {
            "gpu_mem_bytes": gpu,
            # mostly fits; now and then the weights alone overflow the GPUs
            "weight_bytes": rng.randint(0, int(gpu * tp * rng.choice([0.5, 0.8, 0.8, 1.1]))),
            "reserve_bytes": rng.randint(0, 8) * GiB // 2,
            "block_size": rng.choice([1, 8, 16, 16, 32]),
            "tensor_parallel": tp,
        }
        if rng.random() < 0.5:
            fn, kw["context_len"] = "max_concurrent_seqs", rng.randint(1, 131072)
        else:
            fn, kw["num_seqs"] = "max_context_len", rng.randint(1, 512)
        out.append(_named(_capacity(fn, config, dtype, **kw), f"hidden-{i:02d}",
                          f"seeded {fn}, {dtype}, tp={tp}", level=2))
    return out


def cases(level: int, seed: int) -> list[Case]:
    if level == 1:
        return _level1_fixed() + _level1_hidden(seed)
    if level == 2:
        return _level2_fixed() + _level2_hidden(seed)
    raise ValueError(f"kv-bytes has no level {level}")


# -- diagnosis -----------------------------------------------------------------------------------
def _variant(args: dict[str, Any], **bug: Any) -> float | None:
    """bytes per token (per GPU) computed with one deliberate mistake; None if not computable."""
    config, dtype = args["config"], args["dtype"]
    try:
        heads = config["num_attention_heads"]
        kv = config.get("num_key_value_heads") or heads
        if bug.get("query_heads"):
            kv = heads
        hd = config.get("head_dim") or config["hidden_size"] // heads
        if bug.get("ignore_head_dim"):
            hd = config["hidden_size"] // heads
        bits = bug.get("bits") or BITS[dtype]
        tp = args.get("tensor_parallel", 1)
        if not bug.get("ignore_tp"):
            kv = kv // tp if kv >= tp else 1
        vector: float = -(-hd * bits // 8)
        if bug.get("fractional"):
            vector = hd * bits / 8
        factor = 1 if bug.get("no_kv_pair") else 2
        return float(factor * config["num_hidden_layers"] * kv * vector)
    except (KeyError, TypeError, ZeroDivisionError):
        return None


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


def _capacity_variant(fn: str, args: dict[str, Any], bug: str) -> float | None:
    per_token = _variant(args, ignore_tp=(bug == "weights_tp"))
    if per_token is None or per_token <= 0:
        return None
    tp = args.get("tensor_parallel", 1)
    weights = (args["weight_bytes"] if bug == "weights_tp" else args["weight_bytes"] // tp
               if bug == "weights_floor" else -(-args["weight_bytes"] // tp))
    reserve = 0 if bug == "no_reserve" else args["reserve_bytes"]
    free = args["gpu_mem_bytes"] - weights - reserve
    if free <= 0:
        return 0
    bs = args.get("block_size", 16)
    if fn == "max_concurrent_seqs":
        ctx = args["context_len"]
        if bug == "no_blocks":
            return float(free // (per_token * ctx))
        return float((free // (bs * per_token)) // -(-ctx // bs))
    seqs = args["num_seqs"]
    if bug == "no_blocks":
        return float(free // (per_token * seqs))
    return float(((free // (bs * per_token)) // seqs) * bs)


CAPACITY_BUGS = [
    ("no_blocks", "the cache is paged: memory is cut into blocks of block_size tokens, and a "
                  "sequence of n tokens uses ceil(n / block_size) whole blocks"),
    ("no_reserve", "subtract reserve_bytes (activations, CUDA context) from the free memory"),
    ("weights_tp", "with tensor_parallel GPUs each holds ceil(weight_bytes / tp) of the weights "
                   "and kv_heads / tp KV heads"),
    ("weights_floor", "each GPU holds ceil(weight_bytes / tp) of the weights: a byte that does "
                      "not split evenly still takes room (round up, not down)"),
]


def _diagnose(case: Case, got: object, want: object) -> str:
    """The rule a wrong answer most likely missed ('' if no known mistake explains it).

    A variant that happens to give the right answer on this input explains nothing, so it is
    skipped.
    """
    fn, args = case.params["function"], case.params["args"]

    def explains(variant: float | None) -> bool:
        return variant is not None and variant != want and got == variant

    if fn == "kv_bytes_per_token":
        for bug, why in BPT_BUGS:
            if explains(_variant(args, **{bug: True})):
                return why
        dtype = args.get("dtype")
        for bits in (32, 16, 8, 4):
            if dtype in BITS and bits != BITS[dtype] and explains(_variant(args, bits=bits)):
                return f"{dtype!r} has {BITS[dtype]} bits per value; you used {bits}"
    else:
        for bug, why in CAPACITY_BUGS:
            if explains(_capacity_variant(fn, args, bug)):
                return why
    return ""


def check(case: Case, got: object, expected: object) -> Verdict:
    assert isinstance(expected, dict)
    fn = case.params["function"]
    if not isinstance(got, dict):
        return Verdict(False, f"internal: unexpected observation {got!r}")
    if "raised" in expected:
        if "raised" in got:
            return Verdict(True)
        return Verdict(False, f"{fn} should raise ValueError here ({expected['message']}), "
                              f"but returned {got['value']!r}")
    want = expected["value"]
    if "raised" in got:
        return Verdict(False, f"{fn} raised ValueError({got['message']!r}) but the input is "
                              f"valid: expected {want!r}")
    value = got["value"]
    if isinstance(value, bool) or not isinstance(value, int):
        if value == want:
            why = "the number is right; return an int (use // rather than /)"
        else:
            why = _diagnose(case, value, want)
        return Verdict(False, f"{fn} must return an int, got {type(value).__name__} {value!r} "
                              f"(expected {want!r})" + (f" — {why}" if why else ""))
    if value == want:
        return Verdict(True)
    why = _diagnose(case, value, want)
    try:
        ratio = f" ({value / want:.3g}× the expected value)" if want and value else ""
        shown = f"{value:,}"
    except (OverflowError, ValueError):  # a 5000-digit int: too big to divide or to print
        ratio, shown = "", f"an int of about {value.bit_length() * 0.30103:.0f} digits"
    return Verdict(False, f"{fn}: expected {want:,}, got {shown}{ratio}"
                          + (f" — {why}" if why else ""))
