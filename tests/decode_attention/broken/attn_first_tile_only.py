"""Broken: only the first BLOCK_N keys are visited."""

from _da_base import export, mutate

export(mutate(
    'attn_first_tile_only',
    ('    for start in range(0, n, BLOCK_N):\n', '    for start in range(0, BLOCK_N, BLOCK_N):\n'),
), globals())
