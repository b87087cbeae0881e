"""Broken: tests the token's truth value before the stop set, so a stop token of id 0 (the
shipped target's EOS) never stops a request."""

from _engine_base import mutate

Engine = mutate(
    "eos_zero_ignored",
    ("if self.out[-1] in self.req.stop_token_ids:",
     "if self.out[-1] and self.out[-1] in self.req.stop_token_ids:"),
).Engine
