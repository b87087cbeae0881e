"""Broken: free releases a block only if its count is 1 and never decrements shared ones."""

from _paged_base import export, mutate

export(mutate(
    'refcount_not_decremented',
    ('            self.ref[b] -= 1\n            if self.ref[b] == 0:',
     '            if self.ref[b] == 1:\n                self.ref[b] = 0'),
), globals())
