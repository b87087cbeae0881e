"""Broken: can_allocate ignores prefix-cache hits."""

from _paged_base import export, mutate

export(mutate(
    'can_allocate_ignores_hits',
    ('        return need <= self.num_free() - sum(1 for b in hits if self.ref[b] == 0)',
     '        return -(-len(token_ids) // self.block_size) <= self.num_free()'),
), globals())
