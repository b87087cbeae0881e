"""Broken: Row-parallel partial products returned without the all-reduce."""

from _tp_base import export, mutate

export(mutate(
    'row_no_all_reduce',
    ('        y = F.linear(x, self.weight)\n'
     '        if self.world > 1:\n'
     '            dist.all_reduce(y, group=self.group)\n'
     '        return y if self.bias is None else y + self.bias\n',
     '        y = F.linear(x, self.weight)\n'
     '        return y if self.bias is None else y + self.bias\n'),
), globals())
