"""Broken: admits and grows without looking at the KV budget."""

from _engine_base import mutate

Engine = mutate(
    "ignores_budget",
    ("held + need > self.budget", "False"),
    ("while self.budget is not None and held > self.budget and len(self.running) > 1:",
     "while False:"),
).Engine
