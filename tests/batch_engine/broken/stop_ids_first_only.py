"""Broken: only the first of stop_token_ids and of stop_sequences is checked."""

from _engine_base import mutate

Engine = mutate(
    "stop_ids_first_only",
    ("        if self.out[-1] in self.req.stop_token_ids:\n",
     "        if self.out[-1] in self.req.stop_token_ids[:1]:\n"),
    ("        for stop in self.req.stop_sequences:\n",
     "        for stop in self.req.stop_sequences[:1]:\n"),
).Engine
