"""Broken: leaves the stop string in the returned text."""

from _sampling_base import export, mutate

export(mutate(
    'stop_kept_in_text',
    ('text if cut is None else text[:cut]', 'text'),
), globals())
