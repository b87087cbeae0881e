"""Broken kv-bytes: the dtype table lacks the alias 'half' (float16 and fp16 work)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(no_half=True)
