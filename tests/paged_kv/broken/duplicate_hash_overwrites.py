# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: a block that fills with a hash already cached replaces the cached block in the map
(it should be left alone: the first block registered under a hash stays the one hits reuse)."""

from _paged_base import export, mutate

export(mutate(
    'duplicate_hash_overwrites',
    ('        if self.caching and h is not None and h not in self.cached:\n            self.cached[h] = block',
     '        if self.caching and h is not None:\n            self.hash_of.pop(self.cached.get(h, -1), None)\n            self.cached[h] = block'),
), globals())
