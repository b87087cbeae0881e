# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: copy-on-write also copies a shared last block that is full."""

from _paged_base import export, mutate

export(mutate(
    'cow_copies_full_blocks',
    ('            block = self._new_block()\n            table.append(block)\n',
     '            block = self._new_block()\n            if table and self.ref[table[-1]] > 1:\n                cow = (table[-1], block)\n            table.append(block)\n'),
), globals())
