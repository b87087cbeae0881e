"""Broken: looks a prefix hash up with `if not self.cached.get(h)`: a cached block 0 misses."""

from _paged_base import export, mutate

export(mutate(
    'hit_block_zero_falsy',
    ('                if parent not in self.cached:\n',
     '                if not self.cached.get(parent):\n'),
), globals())
