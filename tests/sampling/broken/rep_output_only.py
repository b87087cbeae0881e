"""Broken: the repetition penalty looks at the output only, not the prompt."""

from _sampling_base import export, mutate

export(mutate(
    'rep_output_only',
    ('    history = [*prompt, *output]\n', '    history = list(output)\n'),
), globals())
