"""Broken: fork gives the child the parent's table list itself (no copy), so a copy-on-write on
one side rewrites the other's table too."""

from _paged_base import export, mutate

export(mutate(
    'fork_aliases_table',
    ('        self.tables[child_id] = list(table)\n',
     '        self.tables[child_id] = table\n'),
), globals())
