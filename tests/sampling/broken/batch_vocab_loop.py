"""Broken: the repetition penalty walks every (row, id) of the batch in Python: right, but
B x V steps (each id's penalty read from its row's: a lookup per id, not a search)."""

from _sampling_base import export, mutate

export(mutate(
    'batch_vocab_loop',
    ('        got = flat[idx]\n        flat[idx] = torch.where(got < 0, got * rep, got / rep)\n',
     '        b = scores.shape[0]\n'
     '        mask = torch.zeros(b * v, dtype=torch.bool)\n'
     '        mask[idx.cpu()] = True\n'
     '        per_row = torch.tensor([_param(p, "repetition_penalty") for p in params],\n'
     '                               dtype=scores.dtype).tolist()\n'
     '        for f in range(b * v):\n'
     '            if bool(mask[f]):\n'
     '                x, r = float(flat[f]), per_row[f // v]\n'
     '                flat[f] = x * r if x < 0 else x / r\n'),
), globals())
