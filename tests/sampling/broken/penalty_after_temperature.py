"""Broken: temperature is applied before the penalties."""

from _sampling_base import export, mutate

export(mutate(
    'penalty_after_temperature',
    ('    rep = _param(params, "repetition_penalty")\n',
     '    if _param(params, "temperature") not in (0.0, 1.0):\n'
     '        scores = scores / _param(params, "temperature")\n'
     '    rep = _param(params, "repetition_penalty")\n'),
    ('scores = TemperatureLogitsWarper(temp)(None, scores)', 'pass'),
), globals())
