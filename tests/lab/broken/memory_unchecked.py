"""Broken kv-bytes: negative memory sizes are not refused (a negative reserve adds memory)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(memory_unchecked=True)
