"""Slow: the repetition penalty's ids are found by a Python test of every (row, id) of the
batch, turned into a [B, V] mask: right, but B x V Python steps (a pure-Python loop the speed gate
exists to catch). Graded
by bench/gates.py, asserted nowhere: at the timed case's size it measured 2.7-3.4x against the 3x
gate, because each row's top-p sort costs a CPU about what this pass does."""

from _sampling_base import export, mutate

export(mutate(
    'batch_python_mask',
    ('        got = flat[idx]\n        flat[idx] = torch.where(got < 0, got * rep, got / rep)\n',
     '        on = set(rows)\n'
     '        seen = [set(h) if r in on else set() for r, h in enumerate(hist)]\n'
     '        mask = torch.tensor([[t in s for t in range(v)] for s in seen], device=dev)\n'
     '        per_row = torch.tensor([_param(p, "repetition_penalty") for p in params],\n'
     '                               dtype=scores.dtype, device=dev)[:, None]\n'
     '        scores.copy_(torch.where(mask, torch.where(scores < 0, scores * per_row,\n'
     '                                                   scores / per_row), scores))\n'),
), globals())
