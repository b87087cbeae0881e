# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: online softmax: the running sum is not rescaled when the running max grows."""

from _da_base import export, mutate

export(mutate(
    'attn_no_rescale_sum',
    ('''        l = l * alpha + tl.sum(p, axis=0)\n        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)\n''', '''        l = l + tl.sum(p, axis=0)\n        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)\n'''),
), globals())
