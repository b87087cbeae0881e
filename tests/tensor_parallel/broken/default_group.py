"""Broken: The all-gather runs on the default process group, not the one handed in."""

from _tp_base import export, mutate

export(mutate(
    'default_group',
    ('        dist.all_gather(parts, y.contiguous(), group=self.group)\n',
     '        dist.all_gather(parts, y.contiguous())\n'),
), globals())
