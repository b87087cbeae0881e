"""Broken: a partial batch waits twice max_wait."""

from _engine_base import mutate

Engine = mutate(
    "waits_past_max_wait",
    ("or now - self.waiting[0].arrival >= self.max_wait_s)",
     "or now - self.waiting[0].arrival >= 2 * self.max_wait_s)"),
).Engine
