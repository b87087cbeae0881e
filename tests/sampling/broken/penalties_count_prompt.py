"""Broken: presence/frequency count the prompt's ids too."""

from _sampling_base import export, mutate

export(mutate(
    'penalties_count_prompt',
    ('    if (freq != 0.0 or pres != 0.0) and output:\n'
     '        counts = torch.bincount(torch.tensor(output,',
     '    if (freq != 0.0 or pres != 0.0) and history:\n'
     '        counts = torch.bincount(torch.tensor(history,'),
), globals())
