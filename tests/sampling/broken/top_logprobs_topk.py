"""Broken: the top log-probabilities come from torch.topk, whose order among tied values is
not the contract's (on the CPU it lists the higher id first); ties go by lower id."""

from _sampling_base import export, mutate

export(mutate(
    'top_logprobs_topk',
    ('    values, ids = torch.sort(logp, descending=True, stable=True)\n',
     '    values, ids = torch.topk(logp, n)\n'),
), globals())
