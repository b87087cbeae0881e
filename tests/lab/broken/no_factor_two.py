"""Broken kv-bytes: forgets that the cache holds both K and V."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(no_kv_pair=True)
