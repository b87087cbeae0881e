"""Broken: can_allocate counts only full blocks (len // block_size), forgetting the partial one."""

from _paged_base import export, mutate

export(mutate(
    'can_allocate_ignores_partial',
    ('        need, hits = self._plan(list(token_ids))\n',
     '        need, hits = self._plan(list(token_ids))\n'
     '        need = len(token_ids) // self.block_size - len(hits)\n'),
), globals())
