"""Broken: Attention without the causal mask."""

from _tp_base import export, mutate

export(mutate(
    'attn_no_causal_mask',
    ('        out = F.scaled_dot_product_attention(q.transpose(0, 1), kk, vv, attn_mask=mask)\n',
     '        out = F.scaled_dot_product_attention(q.transpose(0, 1), kk, vv)\n'),
), globals())
