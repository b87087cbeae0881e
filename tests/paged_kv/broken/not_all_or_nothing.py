# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: a failing allocate keeps the blocks it took before running out."""

from _paged_base import export, mutate

export(mutate(
    'not_all_or_nothing',
    ('        if need > self.num_free() - sum(1 for b in hits if self.ref[b] == 0):\n            raise OutOfBlocks(',
     '        if False:\n            raise OutOfBlocks('),
), globals())
