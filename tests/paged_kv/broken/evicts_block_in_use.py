"""Broken: a cache hit on a free cached block leaves it on the eviction list
(so it can be evicted while in use)."""

from _paged_base import export, mutate

export(mutate(
    'evicts_block_in_use',
    ('            self.evictable.pop(b, None)\n',
     ''),
), globals())
