"""Broken: positions count columns of the padded batch instead of each row's own tokens."""

from _base import mutate

Engine = mutate(
    "positions_not_per_row",
    ("pos.append([0] * gap + list(range(seq.cached, seq.cached + len(feed))))",
     "start = 0 if self.kv is None else self.kv.length\n"
     "            pos.append(list(range(start, start + width)))"),
).Engine
