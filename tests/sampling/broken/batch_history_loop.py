"""Slow: the repetition penalty loops over each row's history ids in Python: right, but one
Python step per id (L2-timed-history's long histories put it over its gate)."""

from _sampling_base import export, mutate

export(mutate(
    'batch_history_loop',
    ('        got = flat[idx]\n        flat[idx] = torch.where(got < 0, got * rep, got / rep)\n',
     '        for j, f in enumerate(idx.tolist()):\n'
     '            x = float(flat[f])\n'
     '            flat[f] = x * float(rep[j]) if x < 0 else x / float(rep[j])\n'),
), globals())
