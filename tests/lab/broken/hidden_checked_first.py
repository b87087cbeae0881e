"""Broken kv-bytes: refuses hidden_size not divisible by the heads even when head_dim is set (level
1)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(hidden_checked_first=True)
