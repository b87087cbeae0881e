"""Broken: MLP gathers gate/up and re-slices for down: right output, three collectives per block."""

from _tp_base import export, mutate

export(mutate(
    'mlp_gathers_then_reduces',
    ('        self.gate = ColumnParallelLinear(gate_weight, None, group, gather_output=False)\n'
     '        self.up = ColumnParallelLinear(up_weight, None, group, gather_output=False)\n'
     '        self.down = RowParallelLinear(down_weight, None, group, input_is_parallel=True)\n',
     '        self.gate = ColumnParallelLinear(gate_weight, None, group, gather_output=True)\n'
     '        self.up = ColumnParallelLinear(up_weight, None, group, gather_output=True)\n'
     '        self.down = RowParallelLinear(down_weight, None, group, input_is_parallel=False)\n'),
), globals())
