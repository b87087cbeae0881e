"""Broken: the batched min-p cut compares with `<=`, so an id whose probability equals min_p x
the top probability exactly is dropped in process_batch (process_logits is right)."""

from _sampling_base import export, mutate

export(mutate(
    'batch_minp_le_threshold',
    ('        drop = probs < min_p * probs.amax(dim=-1, keepdim=True)\n',
     '        drop = probs <= min_p * probs.amax(dim=-1, keepdim=True)\n'),
), globals())
