"""Broken: rejects a request whose prompt + max_tokens is exactly max_positions (>= for >)."""

from _engine_base import mutate

Engine = mutate(
    "off_by_one_max_positions",
    ("if total > self.model.max_positions:", "if total >= self.model.max_positions:"),
).Engine
