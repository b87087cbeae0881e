"""Broken kv-bytes: thinks fp8 takes two bytes."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(fp8_two_bytes=True)
