"""Broken: a greedy row (T = 0) still draws from its generator."""

from _sampling_base import export, mutate

export(mutate(
    'greedy_draws',
    ('            out.append(int(best[r]))\n',
     '            torch.multinomial(probs[r].nan_to_num(1.0), 1, generator=g)\n'
     '            out.append(int(best[r]))\n'),
), globals())
