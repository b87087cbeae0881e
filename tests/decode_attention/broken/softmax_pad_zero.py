"""Broken: masked lanes load 0.0, so the padding past the width adds to the sum."""

from _da_base import export, mutate

export(mutate(
    'softmax_pad_zero',
    ('mask=mask, other=float("-inf"))', 'mask=mask, other=0.0)'),
), globals())
