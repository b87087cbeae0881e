"""Broken: An uneven split is floor-divided silently (the last rows are dropped)."""

from _tp_base import export, mutate

export(mutate(
    'no_divisibility_check',
    ('    if size % world:\n',
     '    if False:\n'),
), globals())
