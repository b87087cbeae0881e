"""Broken: RoPE applied at positions 0..T-1 instead of the positions handed in."""

from _tp_base import export, mutate

export(mutate(
    'attn_positions_from_zero',
    ('        q = rope(F.linear(x, self.q).view(t, -1, d), positions, self.theta)\n'
     '        k = rope(F.linear(x, self.k).view(t, -1, d), positions, self.theta)\n',
     '        q = rope(F.linear(x, self.q).view(t, -1, d), torch.arange(t), self.theta)\n'
     '        k = rope(F.linear(x, self.k).view(t, -1, d), torch.arange(t), self.theta)\n'),
), globals())
