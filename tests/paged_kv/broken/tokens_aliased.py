"""Broken: allocate keeps the caller's token list itself (no copy), so every append_slot later
appends to the caller's list: an input changed after the call returned."""

from _paged_base import export, mutate

export(mutate(
    'tokens_aliased',
    ('        tokens = list(token_ids)\n        need, hits = self._plan(tokens)\n',
     '        tokens = token_ids if isinstance(token_ids, list) else list(token_ids)\n'
     '        need, hits = self._plan(tokens)\n'),
), globals())
