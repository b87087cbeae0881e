"""Broken: Row-parallel bias added by every rank before the all-reduce (W times in the sum)."""

from _tp_base import export, mutate

export(mutate(
    'row_bias_every_rank',
    ('        y = F.linear(x, self.weight)\n'
     '        if self.world > 1:\n'
     '            dist.all_reduce(y, group=self.group)\n'
     '        return y if self.bias is None else y + self.bias\n',
     '        y = F.linear(x, self.weight, self.bias)\n'
     '        if self.world > 1:\n'
     '            dist.all_reduce(y, group=self.group)\n'
     '        return y\n'),
), globals())
