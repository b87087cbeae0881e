# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: visits n // block_size blocks: the last, partly filled one is skipped."""

from _da_base import export, mutate

export(mutate(
    'paged_floor_blocks',
    ('    for j in range(0, tl.cdiv(n, BLOCK_SIZE)):\n', '    for j in range(0, n // BLOCK_SIZE):\n'),
), globals())
