"""Broken: KV heads floor-divided across ranks even when W does not divide them (a rank gets
none)."""

from _tp_base import export, mutate

export(mutate(
    'plan_floor_kv_split',
    ('    if num_kv_heads % world_size == 0:\n',
     '    if True:\n'),
), globals())
