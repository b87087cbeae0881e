"""Broken: the scores multiplied by sqrt(d): the launcher passes 1 / scale."""

from _da_base import export, mutate

export(mutate(
    'attn_sqrt_d',
    ('out, seq_lens, scale,', 'out, seq_lens, 1.0 / scale,'),
), globals())
