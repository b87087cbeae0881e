"""Broken kv-bytes: always derives head_dim from hidden_size."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(ignore_head_dim=True)
