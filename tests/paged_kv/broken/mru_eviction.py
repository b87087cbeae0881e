"""Broken: evicts the most recently released cached block instead of the least recently released."""

from _paged_base import export, mutate

export(mutate(
    'mru_eviction',
    ('            block, _ = self.evictable.popitem(last=False)',
     '            block, _ = self.evictable.popitem(last=True)'),
), globals())
