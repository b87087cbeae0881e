"""Broken: one generator (the first request's) serves every request."""

from _sampling_base import export, mutate

export(mutate(
    'one_generator',
    ('        gens.append(g)\n', '        gens.append(gens[0] if gens else g)\n'),
), globals())
