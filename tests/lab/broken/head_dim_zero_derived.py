"""Broken kv-bytes: head_dim = 0 read as 'not set' and derived from hidden_size, not refused (level
1)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(head_dim_zero_falsy=True)
