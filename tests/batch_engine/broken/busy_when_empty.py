"""Broken: step() reports work done (True) even when nothing is queued or running."""

from _engine_base import mutate

Engine = mutate(
    "busy_when_empty",
    ("        if batch is None:\n            return False\n        tokens = self.run(batch)",
     "        if batch is None:\n            return not self.waiting\n"
     "        tokens = self.run(batch)"),
).Engine
