"""Broken: the last block of a split is masked at the split's end, not at context_len."""

from _da_base import export, mutate

export(mutate(
    'split_past_length',
    ('        valid = j * BLOCK_SIZE + slot < last\n',
     '        valid = j * BLOCK_SIZE + slot < first + split_tokens\n'),
), globals())
