"""Broken: a temperature under 0.01 is treated as greedy (a shortcut for 'nearly greedy'); the
contract makes only T = 0 greedy."""

from _sampling_base import export, mutate

export(mutate(
    'temp_eps_greedy',
    ('    if temp == 0.0:  # greedy: the (first) argmax alone survives, at its penalised value\n',
     '    if temp < 0.01:  # greedy: the (first) argmax alone survives, at its penalised value\n'),
), globals())
