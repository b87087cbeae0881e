# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: free releases every block of the table, even those a live fork still holds."""

from _paged_base import export, mutate

export(mutate(
    'freed_block_in_table',
    ('            self.ref[b] -= 1\n            if self.ref[b] == 0:',
     '            self.ref[b] = 0\n            if b not in self.empty and b not in self.evictable:'),
), globals())
