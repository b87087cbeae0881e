# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: hands out the highest-numbered free block first."""

from _paged_base import export, mutate

export(mutate(
    'highest_block_first',
    ('            block = heapq.heappop(self.empty)',
     '            block = max(self.empty)\n            self.empty.remove(block)\n            heapq.heapify(self.empty)'),
), globals())
