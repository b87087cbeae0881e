"""Broken: lets a model exception escape step(), taking the whole batch (and engine) down."""

from _base import mutate

Engine = mutate(
    "poison_fails_batch",
    ("            self._isolate(exc, saved, ids, pos)\n            return",
     "            raise exc"),
).Engine
