"""Broken: allocates n // block_size + 1 blocks (one too many for an exactly full block)."""

from _paged_base import export, mutate

export(mutate(
    'off_by_one_boundary',
    ('        return -(-len(tokens) // self.block_size) - len(hits), hits',
     '        return len(tokens) // self.block_size + 1 - len(hits), hits'),
), globals())
