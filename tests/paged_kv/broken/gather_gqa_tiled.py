# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: maps query heads to KV heads by tiling (repeat) instead of grouping."""

from _paged_base import export, mutate

export(mutate(
    'gather_gqa_tiled',
    ('    grouped = q.reshape(B, kvh, group, D)  # query head h reads KV head h // group',
     '    grouped = q.reshape(B, group, kvh, D).transpose(1, 2)  # head h reads KV head h % kvh'),
    ('    return torch.einsum("bkgt,btkd->bkgd", weights, values).reshape(B, H, D)',
     '    return torch.einsum("bkgt,btkd->bkgd", weights, values).transpose(1, 2).reshape(B, H, D)'),
), globals())
