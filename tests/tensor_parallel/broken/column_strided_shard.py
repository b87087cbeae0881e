"""Broken: Column shard taken as every W-th row (strided) instead of a contiguous block."""

from _tp_base import export, mutate

export(mutate(
    'column_strided_shard',
    ('        self.weight = weight[rank * n:(rank + 1) * n].contiguous()\n'
     '        self.bias = None if bias is None else bias[rank * n:(rank + 1) * n].contiguous()\n',
     '        self.weight = weight[rank::self.world].contiguous()\n'
     '        self.bias = None if bias is None else bias[rank::self.world].contiguous()\n'),
), globals())
