"""Broken: stop sequences are matched on the generated ids joined as text, so a sequence whose
digits coincide with two other tokens' matches ([343, 36] after 34, 336)."""

from _engine_base import mutate

Engine = mutate(
    "stop_seq_as_text",
    ("            if stop and tuple(self.out[-len(stop):]) == stop:\n",
     "            if stop and ''.join(map(str, self.out)).endswith(''.join(map(str, stop))):\n"),
).Engine
