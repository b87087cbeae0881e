"""Broken: top-k uses the batch's largest k for every row."""

from _sampling_base import export, mutate

export(mutate(
    'batch_max_k',
    ('kth = sub.topk(int(kk.max()), dim=1).values.gather(1, kk - 1)',
     'kth = sub.topk(int(kk.max()), dim=1).values[:, -1:]'),
), globals())
