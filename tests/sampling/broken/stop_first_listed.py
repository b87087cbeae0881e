"""Broken: cuts at the first-listed stop string found, not the earliest in the text."""

from _sampling_base import export, mutate

export(mutate(
    'stop_first_listed',
    ('return min(hits) if hits else None', 'return hits[0] if hits else None'),
), globals())
