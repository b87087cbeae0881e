# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: hashes and shares the partly filled last block of a prompt too."""

from _paged_base import export, mutate

export(mutate(
    'partial_block_shared',
    ('            for i in range(len(tokens) // self.block_size):\n                parent = self._hash(parent, tokens, i)\n                if parent not in self.cached:',
     '            for i in range(-(-len(tokens) // self.block_size)):\n                parent = self._hash(parent, tokens, i)\n                if parent not in self.cached:'),
    ('        for i in range(len(tokens) // self.block_size):\n            parent = self._hash(parent, tokens, i)\n            if i >= len(hits):',
     '        for i in range(-(-len(tokens) // self.block_size)):\n            parent = self._hash(parent, tokens, i)\n            if i >= len(hits):'),
), globals())
