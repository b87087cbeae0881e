# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: a per-token Python loop: right answers, far slower than the vectorised gather."""

from _paged_base import export, mutate

export(mutate(
    'gather_python_loop',
    ('    keys = k_cache[block_tables].reshape(B, width, kvh, D)  # [B, T, kvh, D]\n    values = v_cache[block_tables].reshape(B, width, kvh, D)',
     '    keys = torch.stack([torch.stack([k_cache[block_tables[b, t // bs], t % bs] for t in range(width)]) for b in range(B)])\n    values = torch.stack([torch.stack([v_cache[block_tables[b, t // bs], t % bs] for t in range(width)]) for b in range(B)])'),
), globals())
