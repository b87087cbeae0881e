"""Broken: preempts when the batch would hold exactly the budget (>= for >), though a batch that
fills the budget exactly fits."""

from _engine_base import mutate

Engine = mutate(
    "preempt_at_budget",
    ("        while self.budget is not None and held > self.budget and len(self.running) > 1:",
     "        while self.budget is not None and held >= self.budget and len(self.running) > 1:"),
).Engine
