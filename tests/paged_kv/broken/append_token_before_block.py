# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: append_slot records the new token before taking its block, so an append that raises
OutOfBlocks leaves the sequence one token longer."""

from _paged_base import export, mutate

export(mutate(
    'append_token_before_block',
    ('        cow: tuple[int, int] | None = None\n        if offset == 0:\n',
     '        cow: tuple[int, int] | None = None\n        tokens.append(token_id)\n        if offset == 0:\n'),
    ('        tokens.append(token_id)\n        if self.caching and',
     '        if self.caching and'),
), globals())
