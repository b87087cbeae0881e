"""Broken: an off-by-one lets one request more than max_batch_size into a batch."""

from _engine_base import mutate

Engine = mutate(
    "over_cap",
    ("n = min(self.max_batch_size, len(self.waiting))",
     "n = min(self.max_batch_size + 1, len(self.waiting))"),
).Engine
