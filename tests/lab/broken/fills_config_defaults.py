"""Broken kv-bytes: fills a missing num_key_value_heads (MHA) into the caller's config dict,
which is read-only (the caller reuses it for the next question)."""

from _kvbase import make

kv_bytes_per_token, max_concurrent_seqs, max_context_len = make(fills_defaults=True)
