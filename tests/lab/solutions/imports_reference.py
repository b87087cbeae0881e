"""Cheating solution: copies the reference's answers."""

from lab.reference.kv_bytes import kv_bytes_per_token  # noqa: F401
