# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: `if self.max_wait_s` reads max_wait 0 as "no wait configured", so a partial batch
waits for a full one forever."""

from _engine_base import mutate

Engine = mutate(
    "wait_zero_falsy",
    ("                                       or now - self.waiting[0].arrival >= self.max_wait_s)",
     "                                       or (bool(self.max_wait_s)\n"
     "                                           and now - self.waiting[0].arrival >= self.max_wait_s))"),
).Engine
