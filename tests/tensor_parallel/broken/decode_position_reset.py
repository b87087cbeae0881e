"""Broken: Every forward restarts positions at 0 (a step's token is rotated as position 0)."""

from _tp_base import export, mutate

export(mutate(
    'decode_position_reset',
    ('        positions = torch.arange(self.length, self.length + len(tokens))\n',
     '        positions = torch.arange(len(tokens))\n'),
), globals())
