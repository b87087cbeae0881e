"""Broken: the result written into x itself (its input)."""

from _da_base import export, mutate

export(mutate(
    'softmax_in_place',
    ('    out = torch.empty_like(x)\n    softmax_kernel', '    out = x\n    softmax_kernel'),
), globals())
