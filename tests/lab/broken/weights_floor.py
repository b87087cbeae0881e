"""Broken kv-bytes: splits the weights as floor(weight_bytes / tp), not ceil (level 2)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(weights_floor=True)
