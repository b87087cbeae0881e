"""Broken: Each rank computes and caches every KV head (right tokens, the cache not split)."""

from _tp_base import export, mutate

export(mutate(
    'decode_full_kv_cache',
    ('                attn.k = rows(p + "self_attn.k_proj.weight", plan["kv_heads"])\n'
     '                attn.v = rows(p + "self_attn.v_proj.weight", plan["kv_heads"])\n',
     '                every = list(range(cfg["kv_heads"]))\n'
     '                attn.k = rows(p + "self_attn.k_proj.weight", every)\n'
     '                attn.v = rows(p + "self_attn.v_proj.weight", every)\n'),
    ('                attn.kv_of_q = [plan["kv_heads"].index(h // g) for h in plan["q_heads"]]\n',
     '                attn.kv_of_q = [h // g for h in plan["q_heads"]]\n'),
), globals())
