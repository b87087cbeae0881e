"""Broken: Only rank 0 calls the all-reduce: it waits for peers that never come."""

from _tp_base import export, mutate

export(mutate(
    'row_reduce_on_rank0_only',
    ('        y = F.linear(x, self.weight)\n'
     '        if self.world > 1:\n',
     '        y = F.linear(x, self.weight)\n'
     '        if self.world > 1 and self.rank == 0:\n'),
), globals())
