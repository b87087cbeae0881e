"""Broken kv-bytes: counts int4 as half a byte per value without rounding."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(fractional=True)
