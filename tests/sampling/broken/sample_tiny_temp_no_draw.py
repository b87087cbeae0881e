"""Broken: `sample` treats a temperature under 0.01 as greedy and draws nothing for it (its
processed row is nearly one-hot anyway), so that request's generator falls out of step."""

from _sampling_base import export, mutate

export(mutate(
    'sample_tiny_temp_no_draw',
    ('        if _param(params[r], "temperature") == 0.0:\n            out.append(int(best[r]))',
     '        if _param(params[r], "temperature") < 0.01:\n            out.append(int(best[r]))'),
), globals())
