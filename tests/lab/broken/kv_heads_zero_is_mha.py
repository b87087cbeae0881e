"""Broken kv-bytes: num_key_value_heads = 0 read as 'not set' (config.get(...) or heads), not
refused (level 1)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(kv_zero_falsy=True)
