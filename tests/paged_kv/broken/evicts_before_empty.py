# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: evicts a cached block even when an empty block is available."""

from _paged_base import export, mutate

export(mutate(
    'evicts_before_empty',
    ('        if self.empty:\n            block = heapq.heappop(self.empty)\n        elif self.evictable:\n            block, _ = self.evictable.popitem(last=False)\n            del self.cached[self.hash_of.pop(block)]',
     '        if self.evictable:\n            block, _ = self.evictable.popitem(last=False)\n            del self.cached[self.hash_of.pop(block)]\n        elif self.empty:\n            block = heapq.heappop(self.empty)'),
), globals())
