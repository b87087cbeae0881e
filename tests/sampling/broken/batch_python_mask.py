"""Slow: the repetition penalty's ids are found by a Python test of every (row, id) of the
batch, turned into a [B, V] mask: right, but B x V Python steps. Graded by bench/gates.py,
asserted nowhere: on a CPU it costs about what correct masks over all rows do (3.1-3.6x under
L2-timed-top-p's 4.5x gate, 2.2-2.6x under L2-timed-history's 3.8x; in a case sized for it
7.5-10x beside 1.2-3.8x for correct code), so no gate places it 2.5x away both ways."""

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
