"""Broken: A full input is sliced to rank 0's columns on every rank."""

from _tp_base import export, mutate

export(mutate(
    'row_first_slice_everywhere',
    ('            x = x[..., self.rank * self.n:(self.rank + 1) * self.n]\n',
     '            x = x[..., :self.n]\n'),
), globals())
