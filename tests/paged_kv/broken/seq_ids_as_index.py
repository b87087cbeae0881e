"""Broken: sequence tables live in a list indexed by sequence id, so id -1 is the last slot and
a sequence with a negative id aliases another's table."""

from _paged_base import export, mutate

export(mutate(
    'seq_ids_as_index',
    ('    def _table(self, seq_id: int) -> list[int]:\n'
     '        if seq_id not in self.tables:\n',
     '    def _table(self, seq_id: int) -> list[int]:\n'
     '        if seq_id < 0:\n'
     '            seq_id = len(self.tables) + seq_id\n'
     '        if seq_id not in self.tables:\n'),
), globals())
