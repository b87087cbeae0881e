"""A kv-bytes solution with switchable mistakes; each broken_*.py module turns one on.

The mistakes are the ones candidates make in interviews, so the grader must catch each one and
name it.
"""

import math

BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
         "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1, "int4": 0.5}


def make(no_kv_pair=False, query_heads=False, ignore_head_dim=False, fractional=False,
         fp8_two_bytes=False, accept_unknown_dtype=False, kv_key_required=False,
         no_blocks=False, no_reserve=False, weights_not_split=False, kv_zero_falsy=False,
         head_dim_zero_falsy=False, hidden_checked_first=False, replicas_unchecked=False,
         weights_floor=False, memory_unchecked=False, no_half=False, fills_defaults=False):
    def kv_bytes_per_token(config, dtype, tensor_parallel=1):
        if no_half and dtype == "half":
            raise ValueError(f"unknown dtype {dtype}")
        if dtype not in BYTES:
            if not accept_unknown_dtype:
                raise ValueError(f"unknown dtype {dtype}")
            per_value = 2
        else:
            per_value = BYTES[dtype]
        if fp8_two_bytes and per_value == 1:
            per_value = 2
        layers = config["num_hidden_layers"]
        heads = config["num_attention_heads"]
        if type(layers) is not int or layers < 1 or type(heads) is not int or heads < 1:
            raise ValueError("layers and heads must be positive ints")
        if fills_defaults:  # MHA default written into the caller's config
            config.setdefault("num_key_value_heads", heads)
        kv = config["num_key_value_heads"] if kv_key_required else config.get("num_key_value_heads")
        if kv_zero_falsy:  # `or`: a count of 0 reads as "not set"
            kv = kv or heads
        elif kv is None:
            kv = heads
        elif kv < 1:
            raise ValueError("num_key_value_heads must be positive")
        if heads % kv:
            raise ValueError("heads % kv")
        if query_heads:
            kv = heads
        if hidden_checked_first and config["hidden_size"] % heads:
            raise ValueError("hidden % heads")
        hd = config.get("head_dim")
        if head_dim_zero_falsy:
            hd = hd or None
        if hd is not None and hd < 1:
            raise ValueError("head_dim must be positive")
        if hd is None or ignore_head_dim:
            if config["hidden_size"] % heads or config["hidden_size"] < 1:
                raise ValueError("hidden % heads")
            hd = config["hidden_size"] // heads
        tp = tensor_parallel
        if tp < 1 or (kv % tp if kv >= tp else 0 if replicas_unchecked else tp % kv):
            raise ValueError("tp")
        kv = kv // tp if kv >= tp else 1
        vector = hd * per_value if fractional else math.ceil(hd * per_value)
        return (1 if no_kv_pair else 2) * layers * kv * vector

    def _blocks_and_per_token(config, dtype, gpu, weights, reserve, block_size, tp):
        if (not memory_unchecked and min(gpu, weights, reserve) < 0) or block_size < 1:
            raise ValueError("bad sizes")
        per_token = kv_bytes_per_token(config, dtype, tp)
        w = weights if weights_not_split else weights // tp if weights_floor else -(-weights // tp)
        free = gpu - w - (0 if no_reserve else reserve)
        return max(0, free), per_token

    def max_concurrent_seqs(config, dtype, gpu_mem_bytes, weight_bytes, reserve_bytes,
                            context_len, block_size=16, tensor_parallel=1):
        if context_len < 1:
            raise ValueError("context_len")
        free, per_token = _blocks_and_per_token(config, dtype, gpu_mem_bytes, weight_bytes,
                                                reserve_bytes, block_size, tensor_parallel)
        if no_blocks:
            return free // (per_token * context_len)
        return free // (block_size * per_token) // math.ceil(context_len / block_size)

    def max_context_len(config, dtype, gpu_mem_bytes, weight_bytes, reserve_bytes,
                        num_seqs, block_size=16, tensor_parallel=1):
        if num_seqs < 1:
            raise ValueError("num_seqs")
        free, per_token = _blocks_and_per_token(config, dtype, gpu_mem_bytes, weight_bytes,
                                                reserve_bytes, block_size, tensor_parallel)
        if no_blocks:
            return free // (per_token * num_seqs)
        return free // (block_size * per_token) // num_seqs * block_size

    return kv_bytes_per_token, max_concurrent_seqs, max_context_len
