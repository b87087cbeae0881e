"""Broken: head_plan splits the KV heads only when there are more of them than ranks
(`num_kv_heads > world_size`), so KV heads == W is planned as replicated although each rank
holds a KV head of its own."""

from _tp_base import export, mutate

export(mutate(
    'plan_kv_eq_world_replicated',
    ('    if num_kv_heads % world_size == 0:\n',
     '    if num_kv_heads > world_size and num_kv_heads % world_size == 0:\n'),
), globals())
