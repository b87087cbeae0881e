"""Broken: free releases a table from its first block to its last, so the prefix becomes the
least recently released and is evicted before the tail."""

from _paged_base import export, mutate

export(mutate(
    'free_prefix_first',
    ('        for b in reversed(table):  # the tail first: it is evicted before the prefix\n',
     '        for b in table:\n'),
), globals())
