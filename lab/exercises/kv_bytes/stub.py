"""kv-bytes: KV-cache bytes per token and capacity planning (see `dojo lab show kv-bytes`).

Edit the bodies below, then run `dojo lab grade kv-bytes` (or `dojo lab watch kv-bytes`).
"""

from __future__ import annotations

from typing import Any


def kv_bytes_per_token(config: dict[str, Any], dtype: str, tensor_parallel: int = 1) -> int:
    """Bytes of K and V cache one token adds, per GPU.

    config: num_hidden_layers, num_attention_heads, hidden_size, and optionally
    num_key_value_heads (GQA/MQA) and head_dim. dtype: one of the names in the statement.
    Raise ValueError for an unknown dtype or an inconsistent config.
    """
    raise NotImplementedError("kv_bytes_per_token")


def max_concurrent_seqs(
    config: dict[str, Any],
    dtype: str,
    gpu_mem_bytes: int,
    weight_bytes: int,
    reserve_bytes: int,
    context_len: int,
    block_size: int = 16,
    tensor_parallel: int = 1,
) -> int:
    """How many sequences of `context_len` tokens fit in the paged KV cache (level 2)."""
    raise NotImplementedError("max_concurrent_seqs")


def max_context_len(
    config: dict[str, Any],
    dtype: str,
    gpu_mem_bytes: int,
    weight_bytes: int,
    reserve_bytes: int,
    num_seqs: int,
    block_size: int = 16,
    tensor_parallel: int = 1,
) -> int:
    """The longest context (a multiple of block_size) `num_seqs` sequences can each have (level 2)."""
    raise NotImplementedError("max_context_len")
