"""Broken kv-bytes: forgets reserve_bytes (level 2)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(no_reserve=True)
