"""Broken: writes into a shared, partly filled last block without copying it."""

from _paged_base import export, mutate

export(mutate(
    'no_cow',
    ('            if self.ref[last] > 1:  # shared and partly filled: copy before writing',
     '            if False:'),
), globals())
