# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: every slot of the last block is read, past context_len."""

from _da_base import export, mutate

export(mutate(
    'paged_last_block_unmasked',
    ('''        valid = j * BLOCK_SIZE + slot < n\n        k = tl.load(k_ptr + block * k_stride_blk''', '''        valid = slot < BLOCK_SIZE\n        k = tl.load(k_ptr + block * k_stride_blk'''),
), globals())
