# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: reads blocks 0, 1, 2, ... in order, ignoring the block tables."""

from _paged_base import export, mutate

export(mutate(
    'gather_ignores_table',
    ('    keys = k_cache[block_tables].reshape(B, width, kvh, D)  # [B, T, kvh, D]\n    values = v_cache[block_tables].reshape(B, width, kvh, D)',
     '    order = torch.arange(block_tables.numel(), device=q.device).reshape(block_tables.shape)\n    order = order % k_cache.shape[0]\n    keys = k_cache[order].reshape(B, width, kvh, D)\n    values = v_cache[order].reshape(B, width, kvh, D)'),
), globals())
