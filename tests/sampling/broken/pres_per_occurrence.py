"""Broken: the presence penalty is applied once per occurrence."""

from _sampling_base import export, mutate

export(mutate(
    'pres_per_occurrence',
    ('- pres * (counts > 0).to(scores.dtype)\n    temp =', '- pres * counts\n    temp ='),
), globals())
