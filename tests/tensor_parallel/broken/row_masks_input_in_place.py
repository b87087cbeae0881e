"""Broken: a row-parallel layer handed the full input (input_is_parallel=False) zeroes the other
ranks' columns of the caller's x in place instead of slicing a view of it; its own output is
right, the caller's activations are not."""

from _tp_base import export, mutate

export(mutate(
    'row_masks_input_in_place',
    ('            x = x[..., self.rank * self.n:(self.rank + 1) * self.n]\n',
     '            x[..., :self.rank * self.n] = 0\n'
     '            x[..., (self.rank + 1) * self.n:] = 0\n'
     '            x = x[..., self.rank * self.n:(self.rank + 1) * self.n]\n'),
), globals())
