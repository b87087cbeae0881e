"""Broken: the combine divides by the sum of the weights, without the splits' sums l."""

from _da_base import export, mutate

export(mutate(
    'combine_ignores_l',
    ('    total = tl.sum(l * w, axis=0)\n', '    total = tl.sum(w, axis=0)\n'),
), globals())
