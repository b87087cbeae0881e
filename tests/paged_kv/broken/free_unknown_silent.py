"""Broken: free of an unknown (or already freed) sequence silently does nothing."""

from _paged_base import export, mutate

export(mutate(
    'free_unknown_silent',
    ('        table = self._table(seq_id)\n        del self.tables[seq_id], self.tokens[seq_id]\n',
     '        if seq_id not in self.tables:\n            return\n'
     '        table = self._table(seq_id)\n        del self.tables[seq_id], self.tokens[seq_id]\n'),
), globals())
