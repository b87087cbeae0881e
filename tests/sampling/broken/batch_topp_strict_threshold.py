"""Broken: the batched top-p cut compares with `<` (process_logits is right), so an id whose
ascending cumulative mass equals 1 - top_p exactly survives in process_batch."""

from _sampling_base import export, mutate

export(mutate(
    'batch_topp_strict_threshold',
    ('        drop_sorted = cum <= limit\n', '        drop_sorted = cum < limit\n'),
), globals())
