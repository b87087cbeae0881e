# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: evicts the free cached block that was cached first (FIFO by registration), not the
least recently released one: a block hit and released again is not refreshed."""

from _paged_base import export, mutate

export(mutate(
    'fifo_eviction',
    ('            block, _ = self.evictable.popitem(last=False)\n',
     '            block = min(self.evictable, key=list(self.hash_of).index)\n            del self.evictable[block]\n'),
), globals())
