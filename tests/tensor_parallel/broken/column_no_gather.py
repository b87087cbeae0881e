"""Broken: Column-parallel output never gathered: every rank returns its own slice."""

from _tp_base import export, mutate

export(mutate(
    'column_no_gather',
    ('        if not self.gather_output or self.world == 1:\n',
     '        if True:\n'),
), globals())
