"""Broken: under a KV budget it runs one request at a time. The budget always holds and nothing
is ever preempted, but a queued request that fits the budget waits although a row is free."""

from _engine_base import mutate

Engine = mutate(
    "serial_under_budget",
    ("while self.waiting and len(self.running) < self.max_batch_size:",
     "while self.waiting and len(self.running) < (1 if self.budget is not None\n"
     "                                                 else self.max_batch_size):"),
).Engine
