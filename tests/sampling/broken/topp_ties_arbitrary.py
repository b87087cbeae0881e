"""Broken: keeps transformers' arbitrary subset of the ids tied at the top-p cut."""

from _sampling_base import export, mutate

export(mutate(
    'topp_ties_arbitrary',
    ('scores = scores.masked_fill(scores < kept.min(), NEG_INF) if kept.numel() else cut',
     'scores = cut'),
), globals())
