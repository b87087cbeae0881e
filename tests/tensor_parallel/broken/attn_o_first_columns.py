"""Broken: Every rank keeps o_proj's first columns instead of its own heads' columns."""

from _tp_base import export, mutate

export(mutate(
    'attn_o_first_columns',
    ('        cols = torch.cat([torch.arange(h * d, (h + 1) * d) for h in self.plan["q_'
     'heads"]])\n',
     '        cols = torch.arange(0, len(self.plan["q_heads"]) * d)\n'),
), globals())
