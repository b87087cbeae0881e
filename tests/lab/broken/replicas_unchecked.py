"""Broken kv-bytes: replicates KV heads over any tensor_parallel > kv_heads, even one that is not a
multiple (level 2)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(replicas_unchecked=True)
