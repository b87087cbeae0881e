"""Broken: T = 0 takes the argmax of the raw logits, ignoring the penalties."""

from _sampling_base import export, mutate

export(mutate(
    'greedy_raw_argmax',
    ('        best = int(scores[0].argmax())\n',
     '        best = int(logits.reshape(-1).argmax())\n'),
), globals())
