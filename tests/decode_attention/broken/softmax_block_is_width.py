"""Broken: BLOCK = n_cols, not the next power of two: tl.arange refuses it."""

from _da_base import export, mutate

export(mutate(
    'softmax_block_is_width',
    ('BLOCK=triton.next_power_of_2(n))', 'BLOCK=n)'),
), globals())
