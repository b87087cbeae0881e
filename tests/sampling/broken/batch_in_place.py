"""Broken: process_batch writes the penalties into the caller's logits (no copy first); its
returned rows are right, but the caller's tensor changed under it."""

from _sampling_base import export, mutate

export(mutate(
    'batch_in_place',
    ('    scores = logits.clone()\n    if not logits.shape[0]:\n',
     '    scores = logits\n    if not logits.shape[0]:\n'),
), globals())
