"""Broken: scales the queries in place (`mul_` on a view of q), changing the caller's q."""

from _paged_base import export, mutate

export(mutate(
    'gather_scales_q_in_place',
    ('    scores = torch.einsum("bkgd,btkd->bkgt", grouped, keys) * scale\n',
     '    scores = torch.einsum("bkgd,btkd->bkgt", grouped.mul_(scale), keys)\n'),
), globals())
