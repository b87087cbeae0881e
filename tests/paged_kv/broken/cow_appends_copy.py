"""Broken: copy-on-write appends the copy to the table instead of putting it in place of the
shared last block."""

from _paged_base import export, mutate

export(mutate(
    'cow_appends_copy',
    ('                table[-1] = block\n',
     '                table.append(block)\n'),
), globals())
