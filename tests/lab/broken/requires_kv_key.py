"""Broken kv-bytes: crashes when num_key_value_heads is absent (MHA configs)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(kv_key_required=True)
