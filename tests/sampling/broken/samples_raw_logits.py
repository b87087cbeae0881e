"""Broken: samples from softmax of the raw logits (processing ignored)."""

from _sampling_base import export, mutate

export(mutate(
    'samples_raw_logits',
    ('    probs = scores.softmax(dim=-1)\n    best',
     '    probs = logits.softmax(dim=-1)\n    best'),
), globals())
