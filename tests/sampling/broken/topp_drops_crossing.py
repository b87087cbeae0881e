"""Broken: top-p keeps only the ids strictly inside mass p (drops the crossing token)."""

from _sampling_base import export, mutate

export(mutate(
    'topp_drops_crossing',
    ('        cut = TopPLogitsWarper(p)(None, scores)\n',
     '        probs = scores.softmax(-1)\n'
     '        desc, order = torch.sort(probs, descending=True)\n'
     '        inside = (desc.cumsum(-1) < p) | (torch.arange(v) == 0)\n'
     '        keep = torch.zeros_like(inside).scatter(1, order, inside)\n'
     '        cut = scores.masked_fill(~keep, NEG_INF)\n'),
), globals())
