# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: the scores are not multiplied by scale."""

from _da_base import export, mutate

export(mutate(
    'attn_no_scale',
    ('        s = tl.sum(q[None, :] * k, axis=1) * scale\n', '        s = tl.sum(q[None, :] * k, axis=1)\n'),
), globals())
