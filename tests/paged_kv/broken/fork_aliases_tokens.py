"""Broken: fork gives the child the parent's token list itself (no copy), so every append to
one side also grows the other's token count."""

from _paged_base import export, mutate

export(mutate(
    'fork_aliases_tokens',
    ('        self.tokens[child_id] = list(self.tokens[parent_id])\n',
     '        self.tokens[child_id] = self.tokens[parent_id]\n'),
), globals())
