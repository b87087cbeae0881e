"""Broken: Gathered slices joined along the rows instead of the last dimension."""

from _tp_base import export, mutate

export(mutate(
    'column_gather_dim0',
    ('        return torch.cat(parts, dim=-1)\n',
     '        return torch.cat(parts, dim=0)\n'),
), globals())
