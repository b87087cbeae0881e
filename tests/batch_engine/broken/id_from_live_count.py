"""Broken: submit() numbers a request by how many requests are live, so an id comes back once
the requests before it have finished."""

from _engine_base import mutate

Engine = mutate(
    "id_from_live_count",
    ("        rid = self.next_id\n        self.next_id += 1\n",
     "        rid = len(self.waiting) + len(self.running)\n"),
).Engine
