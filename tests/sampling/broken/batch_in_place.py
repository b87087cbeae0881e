"""Broken: process_batch writes the penalties into the caller's logits (no copy first); its
returned rows are right, but the caller's tensor changed under it."""

from _sampling_base import export, mutate

export(mutate(
    'batch_in_place',
    ('    b, v = logits.shape\n    scores = logits.clone()\n',
     '    b, v = logits.shape\n    scores = logits\n'),
), globals())
