"""Broken kv-bytes: ignores paged blocks (level 2)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(no_blocks=True)
