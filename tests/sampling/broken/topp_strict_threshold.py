"""Broken: top-p's cut compares the ascending mass with `<` where transformers uses `<=`, so an
id whose cumulative mass equals 1 - top_p exactly survives."""

from _sampling_base import export, mutate

export(mutate(
    'topp_strict_threshold',
    ('        cut = TopPLogitsWarper(p)(None, scores)\n',
     '        asc, order = torch.sort(scores, descending=False)\n'
     '        drop = asc.softmax(-1).cumsum(-1) < (1 - p)\n'
     '        drop[..., -1:] = False\n'
     '        cut = scores.masked_fill(drop.scatter(1, order, drop), NEG_INF)\n'),
), globals())
