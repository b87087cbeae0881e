"""Broken: Replicated KV heads reported as not replicated."""

from _tp_base import export, mutate

export(mutate(
    'plan_silent_replication',
    ('    return {"q_heads": q_heads, "kv_heads": kv, "replicated": True,\n',
     '    return {"q_heads": q_heads, "kv_heads": kv, "replicated": False,\n'),
), globals())
