"""Broken: copy-on-write decrements the shared block before taking the new one, so an append
that runs out of blocks (OutOfBlocks) has already dropped a reference."""

from _paged_base import export, mutate

export(mutate(
    'cow_decrement_before_take',
    ('                block = self._new_block()\n                self.ref[last] -= 1\n',
     '                self.ref[last] -= 1\n                block = self._new_block()\n'),
), globals())
