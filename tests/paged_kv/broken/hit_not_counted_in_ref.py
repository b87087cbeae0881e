"""Broken: a prefix hit on a block another live sequence holds does not take a reference
(only a free cached block is re-counted), so freeing either holder releases the shared block."""

from _paged_base import export, mutate

export(mutate(
    'hit_not_counted_in_ref',
    ('            self.evictable.pop(b, None)\n            self.ref[b] += 1\n',
     '            if self.evictable.pop(b, 0) is None:\n                self.ref[b] += 1\n'),
), globals())
