"""Broken kv-bytes: keeps all weights on every GPU under tensor parallelism (level 2)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(weights_not_split=True)
