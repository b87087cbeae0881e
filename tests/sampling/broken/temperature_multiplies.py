"""Broken: temperature multiplies the logits instead of dividing them."""

from _sampling_base import export, mutate

export(mutate(
    'temperature_multiplies',
    ('scores = TemperatureLogitsWarper(temp)(None, scores)', 'scores = scores * temp'),
), globals())
