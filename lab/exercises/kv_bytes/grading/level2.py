"""kv-bytes level 2: `max_concurrent_seqs` and `max_context_len` on a paged cache, with tensor
parallelism, reserve and weight bytes.

A wrong answer is reported with the rule a known wrong variant reproduces (no block rounding, no
reserve, weights not split across GPUs, weights split rounding down).
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.kv_bytes.grading.common import (
    BITS,
    LLAMA2_7B,
    LLAMA3_8B,
    LLAMA3_70B,
    GiB,
    capacity,
    named,
    random_config,
    size_of,
    variant,
)
from lab.grader.api import Case


def cases(seed: int) -> list[Case]:
    return _fixed() + _hidden(seed)


def _fixed() -> list[Case]:
    h100 = 80 * GiB
    w8b = 16_060_000_000
    tiny = {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 8}  # 32 B/token fp16
    specs: list[tuple[str, str, Case]] = [
        ("one-block-exactly", "free memory is exactly one block of 16 tokens",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=1000 + 16 * 32,
                  weight_bytes=600, reserve_bytes=400, context_len=16)),
        ("one-byte-short", "one byte less than a block: nothing fits",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=1000 + 16 * 32 - 1,
                  weight_bytes=600, reserve_bytes=400, context_len=16)),
        ("partial-block", "17 tokens need 2 blocks of 16",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                  weight_bytes=0, reserve_bytes=0, context_len=17)),
        ("block-size-1", "block_size 1: no paging waste",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                  weight_bytes=0, reserve_bytes=0, context_len=17, block_size=1)),
        ("llama3-8b-h100-8k", "Llama-3-8B bf16 on 80 GiB, 4 GiB reserve, 8k context",
         capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                  weight_bytes=w8b, reserve_bytes=4 * GiB, context_len=8192)),
        ("llama2-7b-mha-24g", "MHA eats memory: Llama-2-7B fp16 on 24 GiB at 4k",
         capacity("max_concurrent_seqs", LLAMA2_7B, "fp16", gpu_mem_bytes=24 * GiB,
                  weight_bytes=13_500_000_000, reserve_bytes=2 * GiB, context_len=4096)),
        ("weights-do-not-fit", "weights larger than the GPU: 0 sequences",
         capacity("max_concurrent_seqs", LLAMA3_70B, "bf16", gpu_mem_bytes=h100,
                  weight_bytes=141_000_000_000, reserve_bytes=4 * GiB, context_len=4096)),
        ("reserve-eats-everything", "weights + reserve exactly fill the GPU: max context 0",
         capacity("max_context_len", LLAMA3_8B, "bf16", gpu_mem_bytes=20 * GiB,
                  weight_bytes=16 * GiB, reserve_bytes=4 * GiB, num_seqs=1)),
        ("max-context-llama3-8b", "longest context for 64 concurrent sequences",
         capacity("max_context_len", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                  weight_bytes=w8b, reserve_bytes=4 * GiB, num_seqs=64)),
        ("more-seqs-than-blocks", "more sequences than blocks: max context 0",
         capacity("max_context_len", tiny, "fp16", gpu_mem_bytes=3 * 16 * 32,
                  weight_bytes=0, reserve_bytes=0, num_seqs=4)),
        ("tp2-splits-kv-heads", "Llama-3-70B on 2 GPUs: 4 KV heads and half the weights each",
         capacity("max_concurrent_seqs", LLAMA3_70B, "bf16", gpu_mem_bytes=h100,
                  weight_bytes=141_000_000_000, reserve_bytes=4 * GiB, context_len=4096,
                  tensor_parallel=2)),
        ("tp8-replicates-kv-heads", "8 GPUs, 2 KV heads: each GPU keeps one replicated head",
         capacity("max_context_len", {**LLAMA3_8B, "num_key_value_heads": 2}, "fp8",
                  gpu_mem_bytes=h100, weight_bytes=w8b, reserve_bytes=4 * GiB, num_seqs=32,
                  tensor_parallel=8)),
        ("bytes-per-token-tp4", "kv_bytes_per_token is per GPU under tensor parallelism",
         Case(id="", level=2, size=size_of(LLAMA3_70B),
              params={"function": "kv_bytes_per_token",
                      "args": {"config": LLAMA3_70B, "dtype": "bf16", "tensor_parallel": 4}})),
        ("tp-does-not-divide", "8 KV heads cannot be split over 3 GPUs",
         capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                  weight_bytes=w8b, reserve_bytes=0, context_len=1024, tensor_parallel=3)),
        ("tp-does-not-replicate", "4 KV heads cannot be replicated over 6 GPUs (6 is not a "
         "multiple of 4)",
         capacity("max_concurrent_seqs", {**LLAMA2_7B, "num_key_value_heads": 4}, "bf16",
                  gpu_mem_bytes=h100, weight_bytes=w8b, reserve_bytes=0, context_len=1024,
                  tensor_parallel=6)),
        ("weights-split-rounds-up", "3 bytes of weights on 2 GPUs: each holds ceil(3 / 2) = 2, "
         "leaving one byte short of a block",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=2 + 16 * 32 - 1,
                  weight_bytes=3, reserve_bytes=0, context_len=16, tensor_parallel=2)),
        ("zero-context", "context_len 0 is invalid",
         capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                  weight_bytes=w8b, reserve_bytes=0, context_len=0)),
        ("int4-seats-32k", "int4 cache at 32k context",
         capacity("max_concurrent_seqs", LLAMA3_8B, "int4", gpu_mem_bytes=h100,
                  weight_bytes=w8b, reserve_bytes=4 * GiB, context_len=32768)),
        # every parameter on each side of its bound
        ("context-one", "context_len 1 (the minimum): one block per sequence",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                  weight_bytes=0, reserve_bytes=0, context_len=1)),
        ("zero-seqs", "num_seqs 0 is invalid",
         capacity("max_context_len", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                  weight_bytes=0, reserve_bytes=0, num_seqs=0)),
        ("one-seq", "num_seqs 1 (the minimum): every block to one sequence",
         capacity("max_context_len", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32 + 31,
                  weight_bytes=0, reserve_bytes=0, num_seqs=1)),
        ("zero-block-size", "block_size 0 is invalid",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                  weight_bytes=0, reserve_bytes=0, context_len=16, block_size=0)),
        ("zero-tp", "tensor_parallel 0 is invalid",
         capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                  weight_bytes=w8b, reserve_bytes=0, context_len=1024, tensor_parallel=0)),
        ("tp-equals-kv-heads", "tensor_parallel = KV heads (8): one head per GPU, no replica",
         capacity("max_concurrent_seqs", LLAMA3_8B, "bf16", gpu_mem_bytes=h100,
                  weight_bytes=w8b, reserve_bytes=0, context_len=1024, tensor_parallel=8)),
        ("negative-gpu-mem", "gpu_mem_bytes -1 is invalid",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=-1,
                  weight_bytes=0, reserve_bytes=0, context_len=16)),
        ("negative-weights", "weight_bytes -1 is invalid (it would add memory)",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                  weight_bytes=-1, reserve_bytes=0, context_len=16)),
        ("negative-reserve", "reserve_bytes -1 is invalid (it would add memory)",
         capacity("max_concurrent_seqs", tiny, "fp16", gpu_mem_bytes=10 * 16 * 32,
                  weight_bytes=0, reserve_bytes=-1, context_len=16)),
        ("zero-memory", "gpu_mem_bytes 0 (valid, the minimum): nothing fits",
         capacity("max_context_len", tiny, "fp16", gpu_mem_bytes=0,
                  weight_bytes=0, reserve_bytes=0, num_seqs=1)),
    ]
    return [named(case, cid, desc, level=2) for cid, desc, case in specs]


def _hidden(seed: int, n: int = 24) -> list[Case]:
    rng = random.Random(f"kv-bytes/2/{seed}")
    out = []
    for i in range(n):
        config = random_config(rng)
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
        out.append(named(capacity(fn, config, dtype, **kw), f"hidden-{i:02d}",
                         f"seeded {fn}, {dtype}, tp={tp}", level=2))
    return out


def _capacity_variant(fn: str, args: dict[str, Any], bug: str) -> float | None:
    per_token = variant(args, ignore_tp=(bug == "weights_tp"))
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


def diagnose(case: Case, got: object, want: object) -> str:
    """The rule a wrong answer most likely missed ('' if no known mistake explains it); a
    variant that happens to give the right answer on this input explains nothing."""
    fn, args = case.params["function"], case.params["args"]

    def explains(v: float | None) -> bool:
        return v is not None and v != want and got == v

    for bug, why in CAPACITY_BUGS:
        if explains(_capacity_variant(fn, args, bug)):
            return why
    return ""
