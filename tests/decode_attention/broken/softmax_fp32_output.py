# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: the output allocated as fp32 whatever the input's dtype."""

from _da_base import export, mutate

export(mutate(
    'softmax_fp32_output',
    ('    out = torch.empty_like(x)\n    softmax_kernel', '    out = torch.empty_like(x, dtype=torch.float32)\n    softmax_kernel'),
), globals())
