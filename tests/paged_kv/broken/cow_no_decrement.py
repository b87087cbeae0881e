"""Broken: copy-on-write does not decrement the old block's reference count."""

from _paged_base import export, mutate

export(mutate(
    'cow_no_decrement',
    ('                self.ref[last] -= 1\n',
     ''),
), globals())
