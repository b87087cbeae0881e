"""Broken: evicts the lowest-numbered free cached block instead of the least recently released."""

from _paged_base import export, mutate

export(mutate(
    'evicts_lowest_cached',
    ('            block, _ = self.evictable.popitem(last=False)\n',
     '            block = min(self.evictable)\n            del self.evictable[block]\n'),
), globals())
