"""Broken: every split starts at token 0 instead of s * split_tokens."""

from _da_base import export, mutate

export(mutate(
    'split_from_zero',
    ('    first = s_id * split_tokens\n', '    first = s_id * 0\n'),
), globals())
