# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: builds each token's pool index in a per-token Python loop, then caches it by the
block tables' contents: fast whenever a call's tables were seen before, slow otherwise (timed
calls each bring their own tables, so it pays the loop every time)."""

from _paged_base import export, mutate

export(mutate(
    'gather_index_cached',
    ('    keys = k_cache[block_tables].reshape(B, width, kvh, D)  # [B, T, kvh, D]\n    values = v_cache[block_tables].reshape(B, width, kvh, D)',
     '    key = (tuple(map(tuple, block_tables.tolist())), bs)\n'
     '    cache = globals().setdefault("_INDEX", {})\n'
     '    if key not in cache:\n'
     '        cache.clear()\n'
     '        cache[key] = torch.stack([torch.stack([torch.tensor(int(block_tables[b, t // bs]) * bs + t % bs) for t in range(width)]) for b in range(B)]).to(q.device)\n'
     '    index = cache[key]\n'
     '    keys = k_cache.reshape(-1, kvh, D)[index]\n'
     '    values = v_cache.reshape(-1, kvh, D)[index]'),
), globals())
