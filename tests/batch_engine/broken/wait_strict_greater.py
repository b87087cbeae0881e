"""Broken: `now - arrival > max_wait` (strict): a partial batch goes one scheduler tick after
the oldest request's wait ran out, not on the tick where it runs out."""

from _engine_base import mutate

Engine = mutate(
    "wait_strict_greater",
    ("or now - self.waiting[0].arrival >= self.max_wait_s)",
     "or now - self.waiting[0].arrival > self.max_wait_s)"),
).Engine
