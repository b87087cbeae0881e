"""A learner's correct kv-bytes solution, written independently of lab/reference."""

import math

BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
         "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1, "int4": 0.5}


def _pos(x, name):
    if type(x) is not int or x < 1:
        raise ValueError(f"bad {name}: {x!r}")
    return x


def kv_bytes_per_token(config, dtype, tensor_parallel=1):
    if dtype not in BYTES:
        raise ValueError(f"unknown dtype {dtype}")
    layers = _pos(config.get("num_hidden_layers"), "layers")
    heads = _pos(config.get("num_attention_heads"), "heads")
    kv = config.get("num_key_value_heads")
    kv = heads if kv is None else _pos(kv, "kv heads")
    if heads % kv:
        raise ValueError("heads not divisible by kv heads")
    hd = config.get("head_dim")
    if hd is None:
        hidden = _pos(config.get("hidden_size"), "hidden")
        if hidden % heads:
            raise ValueError("hidden not divisible")
        hd = hidden // heads
    hd = _pos(hd, "head_dim")
    tp = _pos(tensor_parallel, "tp")
    if kv >= tp:
        if kv % tp:
            raise ValueError("tp does not divide kv heads")
        kv //= tp
    else:
        if tp % kv:
            raise ValueError("kv heads do not divide tp")
        kv = 1
    return 2 * layers * kv * math.ceil(hd * BYTES[dtype])


def _blocks(config, dtype, gpu, weights, reserve, block_size, tp):
    for v in (gpu, weights, reserve):
        if type(v) is not int or v < 0:
            raise ValueError("negative memory")
    _pos(block_size, "block_size")
    per_token = kv_bytes_per_token(config, dtype, tp)
    free = gpu - math.ceil(weights / tp) if weights % tp else gpu - weights // tp
    free -= reserve
    return max(0, free) // (block_size * per_token)


def max_concurrent_seqs(config, dtype, gpu_mem_bytes, weight_bytes, reserve_bytes,
                        context_len, block_size=16, tensor_parallel=1):
    _pos(context_len, "context_len")
    blocks = _blocks(config, dtype, gpu_mem_bytes, weight_bytes, reserve_bytes, block_size,
                     tensor_parallel)
    return blocks // math.ceil(context_len / block_size)


def max_context_len(config, dtype, gpu_mem_bytes, weight_bytes, reserve_bytes,
                    num_seqs, block_size=16, tensor_parallel=1):
    _pos(num_seqs, "num_seqs")
    blocks = _blocks(config, dtype, gpu_mem_bytes, weight_bytes, reserve_bytes, block_size,
                     tensor_parallel)
    return blocks // num_seqs * block_size
