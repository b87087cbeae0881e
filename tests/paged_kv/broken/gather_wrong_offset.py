# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: indexes a flat pool with block + offset instead of block * block_size + offset."""

from _paged_base import export, mutate

export(mutate(
    'gather_wrong_offset',
    ('    keys = k_cache[block_tables].reshape(B, width, kvh, D)  # [B, T, kvh, D]\n    values = v_cache[block_tables].reshape(B, width, kvh, D)',
     '    t = torch.arange(width, device=q.device)\n    flat = (block_tables[:, t // bs] + t % bs) % (k_cache.shape[0] * bs)\n    keys = k_cache.reshape(-1, kvh, D)[flat]\n    values = v_cache.reshape(-1, kvh, D)[flat]'),
), globals())
