"""Broken: process_logits subtracts the frequency and presence penalties in place on a view
of the caller's row (same two subtractions, so the returned row is bit for bit right)."""

from _sampling_base import export, mutate

export(mutate(
    'row_in_place',
    ('    scores = logits.reshape(1, v).clone()\n', '    scores = logits.reshape(1, v)\n'),
    ('        scores = scores - freq * counts - pres * (counts > 0).to(scores.dtype)\n',
     '        scores = scores.sub_(freq * counts).sub_(pres * (counts > 0).to(scores.dtype))\n'),
), globals())
