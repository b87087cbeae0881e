"""Broken: ignores continuous=True (a level 1 engine: the batch always runs to completion)."""

from _engine_base import mutate

Engine = mutate(
    "static_when_continuous",
    ("        if self.continuous:\n            self._admit_continuous(self.clock())",
     "        if False:\n            self._admit_continuous(self.clock())"),
).Engine
