"""Broken: draws from torch's global RNG instead of the row's generator."""

from _sampling_base import export, mutate

export(mutate(
    'global_rng',
    ('out.append(int(torch.multinomial(probs[r], 1, generator=g)))',
     'out.append(int(torch.multinomial(probs[r], 1)))'),
), globals())
