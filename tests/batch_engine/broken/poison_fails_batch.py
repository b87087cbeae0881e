"""Broken: lets a model exception escape step(), taking the whole batch (and engine) down."""

from _engine_base import mutate

Engine = mutate(
    "poison_fails_batch",
    ("bad = self._culprits(batch, past, mask)", "bad: list[int] = []"),
).Engine
