"""Broken: attends to one position past seq_len (t <= n)."""

from _da_base import export, mutate

export(mutate(
    'attn_len_plus_one',
    ('        valid = t < n\n', '        valid = t <= n\n'),
), globals())
