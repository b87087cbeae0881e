"""Broken: append_slot never registers the block it fills, so a block that becomes full by an
append is not cached (only blocks filled by allocate are)."""

from _paged_base import export, mutate

export(mutate(
    'append_full_not_registered',
    ('        if self.caching and (n + 1) % self.block_size == 0:\n',
     '        if False:\n'),
), globals())
