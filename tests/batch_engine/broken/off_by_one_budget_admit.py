"""Broken: admits the head of the queue only while it fits with room to spare (>= for >), so a
head that fills the budget exactly waits."""

from _engine_base import mutate

Engine = mutate(
    "off_by_one_budget_admit",
    ("held + need > self.budget", "held + need >= self.budget"),
).Engine
