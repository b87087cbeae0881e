"""Broken: never passes the attention mask (padding is attended as text)."""

from _engine_base import mutate

Engine = mutate(
    "missing_mask",
    ("self.model.forward(batch.ids, mask, batch.positions, past)",
     "self.model.forward(batch.ids, None, batch.positions, past)"),
).Engine
