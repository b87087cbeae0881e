"""Broken: The MLP output is all-reduced again after the row-parallel layer's own all-reduce."""

from _tp_base import export, mutate

export(mutate(
    'mlp_reduced_twice',
    ('        y: torch.Tensor = self.down.forward(F.silu(self.gate.forward(x)) '
     '* self.up.forward(x))\n',
     '        y: torch.Tensor = self.down.forward(F.silu(self.gate.forward(x)) '
     '* self.up.forward(x))\n'
     '        dist.all_reduce(y, group=self.down.group)\n'),
), globals())
