"""Broken: never passes the attention mask (padding is attended as text)."""

from _base import mutate

Engine = mutate(
    "missing_mask",
    ("torch.tensor(ids, dtype=torch.long), self.mask,",
     "torch.tensor(ids, dtype=torch.long), None,"),
).Engine
