"""Broken: top-k keeps exactly k ids, dropping ids tied with the k-th largest."""

from _sampling_base import export, mutate

export(mutate(
    'topk_exact',
    ('        scores = TopKLogitsWarper(k)(None, scores)\n',
     '        keep = torch.zeros_like(scores, dtype=torch.bool)\n'
     '        keep[0, scores[0].topk(min(k, v)).indices] = True\n'
     '        scores = scores.masked_fill(~keep, NEG_INF)\n'),
), globals())
