"""Broken: dispatches whatever is queued at once (never waits for the window)."""

from _engine_base import mutate

Engine = mutate(
    "no_real_wait",
    ("(len(self.waiting) >= self.max_batch_size\n"
     "                                       or now - self.waiting[0].arrival >= self.max_wait_s)",
     "True"),
).Engine
