# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: forgets a block's hash when it is freed (freed blocks do not stay cached)."""

from _paged_base import export, mutate

export(mutate(
    'not_kept_cached',
    ('                if b in self.hash_of:\n                    self.evictable[b] = None',
     '                if b in self.hash_of:\n                    del self.cached[self.hash_of.pop(b)]\n                    heapq.heappush(self.empty, b)'),
), globals())
