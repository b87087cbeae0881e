# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: runs out of blocks with IndexError (popping an empty heap) instead of OutOfBlocks."""

from _paged_base import export, mutate

export(mutate(
    'wrong_exception',
    ('        if need > self.num_free() - sum(1 for b in hits if self.ref[b] == 0):\n            raise OutOfBlocks(',
     '        if False:\n            raise OutOfBlocks('),
    ('            raise OutOfBlocks("all blocks are in use")',
     '            raise IndexError("index out of range")'),
), globals())
