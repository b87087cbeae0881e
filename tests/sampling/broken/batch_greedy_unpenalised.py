"""Broken: process_batch skips the repetition penalty on greedy rows (T = 0), as if a greedy
row needed no processing before its argmax."""

from _sampling_base import export, mutate

export(mutate(
    'batch_greedy_unpenalised',
    ('    rows = [r for r, p in enumerate(params) if _param(p, "repetition_penalty") != 1.0]\n',
     '    rows = [r for r, p in enumerate(params) if _param(p, "repetition_penalty") != 1.0\n'
     '            and _param(p, "temperature") != 0.0]\n'),
), globals())
