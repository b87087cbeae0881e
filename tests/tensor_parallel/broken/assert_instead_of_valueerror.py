"""Broken: An uneven split raises AssertionError, not ValueError."""

from _tp_base import export, mutate

export(mutate(
    'assert_instead_of_valueerror',
    ('    if size % world:\n'
     '        raise ValueError(f"{what}',
     '    if size % world:\n'
     '        raise AssertionError(f"{what}'),
), globals())
