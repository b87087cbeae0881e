"""Broken kv-bytes: uses num_attention_heads instead of num_key_value_heads (GQA)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(query_heads=True)
