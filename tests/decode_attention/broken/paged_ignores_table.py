# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: block j is read as physical block j: the block table is ignored."""

from _da_base import export, mutate

export(mutate(
    'paged_ignores_table',
    ('''        block = tl.load(tables_ptr + b * table_stride_b + j).to(tl.int64)\n        slot = tl.arange(0, BLOCK_SIZE)\n        valid = j * BLOCK_SIZE + slot < n\n''', '''        block = (tl.load(tables_ptr + b * table_stride_b) * 0 + j).to(tl.int64)\n        slot = tl.arange(0, BLOCK_SIZE)\n        valid = j * BLOCK_SIZE + slot < n\n'''),
), globals())
