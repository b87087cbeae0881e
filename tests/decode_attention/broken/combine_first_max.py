"""Broken: the combine subtracts the first split's max, not the largest."""

from _da_base import export, mutate

export(mutate(
    'combine_first_max',
    ('    top = tl.max(m, axis=0)\n', '    top = tl.sum(tl.where(s == 0, m, 0.0), axis=0)\n'),
), globals())
