"""Broken: vLLM's epsilon - a temperature under 1e-5 is treated as greedy; the contract makes
only T = 0 greedy (and transformers' warper divides by any positive T)."""

from _sampling_base import export, mutate

export(mutate(
    'temp_vllm_eps_greedy',
    ('    if temp == 0.0:  # greedy: the (first) argmax alone survives, at its penalised value\n',
     '    if temp < 1e-5:  # greedy: the (first) argmax alone survives, at its penalised value\n'),
), globals())
