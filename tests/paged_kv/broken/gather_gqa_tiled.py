"""Broken: maps query heads to KV heads by tiling (repeat) instead of grouping."""

from _base import export, mutate

export(mutate(
    'gather_gqa_tiled',
    ('    keys = keys.repeat_interleave(group, dim=2)  # query head h reads KV head h // group\n    values = values.repeat_interleave(group, dim=2)',
     '    keys = keys.repeat(1, 1, group, 1)\n    values = values.repeat(1, 1, group, 1)'),
), globals())
