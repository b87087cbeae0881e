"""Broken: hashes a block's tokens without its parent's hash."""

from _paged_base import export, mutate

export(mutate(
    'hash_without_parent',
    ('        return hash((parent, tuple(tokens[i * bs:(i + 1) * bs])))',
     '        return hash((None, tuple(tokens[i * bs:(i + 1) * bs])))'),
), globals())
