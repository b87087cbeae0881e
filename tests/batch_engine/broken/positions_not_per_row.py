"""Broken: positions count columns of the padded batch instead of each row's own tokens."""

from _engine_base import mutate

Engine = mutate(
    "positions_not_per_row",
    ("positions.append([0] * gap + list(range(seq.cached, seq.cached + len(feed))))",
     "start = max(s.cached for s in seqs)  # the cache's columns, not this row's tokens\n"
     "            positions.append(list(range(start, start + width)))"),
).Engine
