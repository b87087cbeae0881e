"""Broken: the repetition penalty pools every row's history (rows leak)."""

from _sampling_base import export, mutate

export(mutate(
    'batch_pooled_history',
    ('    hist = [[*p, *o] for p, o in zip(prompts, outputs, strict=True)]\n',
     '    hist = [[t for p, o in zip(prompts, outputs, strict=True) for t in [*p, *o]]]'
     ' * len(prompts)\n'),
), globals())
