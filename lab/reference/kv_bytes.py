"""Reference for the `kv-bytes` exercise (same interface as lab/exercises/kv_bytes/stub.py)."""

from __future__ import annotations

from typing import Any

DTYPE_BITS: dict[str, int] = {
    "float32": 32, "fp32": 32,
    "bfloat16": 16, "bf16": 16,
    "float16": 16, "fp16": 16, "half": 16,
    "float8_e4m3fn": 8, "float8_e5m2": 8, "fp8": 8,
    "int4": 4,
}


def _positive_int(config: dict[str, Any], key: str) -> int:
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{key} must be a positive int, got {value!r}")
    return value


def head_dim(config: dict[str, Any]) -> int:
    if config.get("head_dim") is not None:
        return _positive_int(config, "head_dim")
    hidden = _positive_int(config, "hidden_size")
    heads = _positive_int(config, "num_attention_heads")
    if hidden % heads:
        raise ValueError(f"hidden_size {hidden} is not divisible by num_attention_heads {heads}")
    return hidden // heads


def kv_heads(config: dict[str, Any]) -> int:
    heads = _positive_int(config, "num_attention_heads")
    if config.get("num_key_value_heads") is None:
        return heads
    kv = _positive_int(config, "num_key_value_heads")
    if heads % kv:
        raise ValueError(f"num_attention_heads {heads} is not a multiple of "
                         f"num_key_value_heads {kv}")
    return kv


def dtype_bits(dtype: str) -> int:
    if dtype not in DTYPE_BITS:
        raise ValueError(f"unknown dtype {dtype!r}")
    return DTYPE_BITS[dtype]


def _kv_heads_per_gpu(kv: int, tensor_parallel: int) -> int:
    tp = tensor_parallel
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"tensor_parallel must be a positive int, got {tensor_parallel!r}")
    if kv >= tensor_parallel:
        if kv % tensor_parallel:
            raise ValueError(f"{kv} KV heads cannot be split over {tensor_parallel} GPUs")
        return kv // tensor_parallel
    if tensor_parallel % kv:
        raise ValueError(f"{kv} KV heads cannot be replicated over {tensor_parallel} GPUs")
    return 1


def kv_bytes_per_token(config: dict[str, Any], dtype: str, tensor_parallel: int = 1) -> int:
    layers = _positive_int(config, "num_hidden_layers")
    bits = dtype_bits(dtype)
    per_gpu_heads = _kv_heads_per_gpu(kv_heads(config), tensor_parallel)
    vector_bytes = -(-head_dim(config) * bits // 8)  # int4: two values per byte, round up
    return 2 * layers * per_gpu_heads * vector_bytes


def _free_blocks(
    config: dict[str, Any], dtype: str, gpu_mem_bytes: int, weight_bytes: int,
    reserve_bytes: int, block_size: int, tensor_parallel: int,
) -> int:
    for name, value in (("gpu_mem_bytes", gpu_mem_bytes), ("weight_bytes", weight_bytes),
                        ("reserve_bytes", reserve_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive int, got {block_size!r}")
    per_token = kv_bytes_per_token(config, dtype, tensor_parallel)
    weights_per_gpu = -(-weight_bytes // tensor_parallel)
    free = gpu_mem_bytes - weights_per_gpu - reserve_bytes
    if free <= 0:
        return 0
    return free // (block_size * per_token)


def max_concurrent_seqs(
    config: dict[str, Any], dtype: str, gpu_mem_bytes: int, weight_bytes: int,
    reserve_bytes: int, context_len: int, block_size: int = 16, tensor_parallel: int = 1,
) -> int:
    if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 1:
        raise ValueError(f"context_len must be a positive int, got {context_len!r}")
    blocks = _free_blocks(config, dtype, gpu_mem_bytes, weight_bytes, reserve_bytes,
                          block_size, tensor_parallel)
    return blocks // -(-context_len // block_size)


def max_context_len(
    config: dict[str, Any], dtype: str, gpu_mem_bytes: int, weight_bytes: int,
    reserve_bytes: int, num_seqs: int, block_size: int = 16, tensor_parallel: int = 1,
) -> int:
    if isinstance(num_seqs, bool) or not isinstance(num_seqs, int) or num_seqs < 1:
        raise ValueError(f"num_seqs must be a positive int, got {num_seqs!r}")
    blocks = _free_blocks(config, dtype, gpu_mem_bytes, weight_bytes, reserve_bytes,
                          block_size, tensor_parallel)
    return (blocks // num_seqs) * block_size
