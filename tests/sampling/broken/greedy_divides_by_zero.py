"""Broken: T = 0 is handed to the temperature warper (a division by zero)."""

from _sampling_base import export, mutate

export(mutate(
    'greedy_divides_by_zero',
    ('    if temp == 0.0:  # greedy', '    if temp < 0.0:  # greedy'),
), globals())
