"""Broken: attends to every slot of the padded tables, past context_lens."""

from _paged_base import export, mutate

export(mutate(
    'gather_no_mask',
    ('    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))\n',
     ''),
), globals())
