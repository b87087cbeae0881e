# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: the launcher scales q in place (an input) before the launch."""

from _da_base import export, mutate

export(mutate(
    'attn_scales_q_in_place',
    ('''    B, H, D = q.shape\n    out = torch.empty_like(q)\n    attention_kernel''', '''    B, H, D = q.shape\n    q.mul_(1.0)\n    q[0, 0, 0] = q[0, 0, 0] * 2\n    out = torch.empty_like(q)\n    attention_kernel'''),
), globals())
