"""Broken: every row draws from the first row's generator."""

from _sampling_base import export, mutate

export(mutate(
    'shared_generator',
    ('out.append(int(torch.multinomial(probs[r], 1, generator=g)))',
     'out.append(int(torch.multinomial(probs[r], 1, generator=generators[0])))'),
), globals())
