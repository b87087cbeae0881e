# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: when no block is free, hands out block 0 again instead of raising OutOfBlocks."""

from _paged_base import export, mutate

export(mutate(
    'silent_overwrite',
    ('        if need > self.num_free() - sum(1 for b in hits if self.ref[b] == 0):\n            raise OutOfBlocks(',
     '        if False:\n            raise OutOfBlocks('),
    ('            raise OutOfBlocks("all blocks are in use")',
     '            return 0'),
), globals())
