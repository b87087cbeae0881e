"""Broken: the frequency penalty is applied once per id, ignoring how often it occurred."""

from _sampling_base import export, mutate

export(mutate(
    'freq_ignores_counts',
    ('scores = scores - freq * counts - pres',
     'scores = scores - freq * (counts > 0).to(scores.dtype) - pres'),
), globals())
