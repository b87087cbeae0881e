"""Broken: can_allocate "touches" the free cached blocks a prompt would hit (moves them to the
most recently released end), so a mere query changes which block is evicted next."""

from _paged_base import export, mutate

export(mutate(
    'can_allocate_touches_lru',
    ('        need, hits = self._plan(list(token_ids))\n'
     '        return need <= self.num_free() - sum(1 for b in hits if self.ref[b] == 0)',
     '        need, hits = self._plan(list(token_ids))\n'
     '        for b in hits:\n'
     '            if b in self.evictable:\n'
     '                self.evictable.move_to_end(b)\n'
     '        return need <= self.num_free() - sum(1 for b in hits if self.ref[b] == 0)'),
), globals())
