"""Broken: submit() gives a request the id of an equal request seen before (ids keyed by the
request's content), so two identical requests share one id."""

from _engine_base import mutate

Engine = mutate(
    "same_id_identical",
    ("        rid = self.next_id\n        self.next_id += 1\n",
     "        ids = self.__dict__.setdefault('_ids', {})\n"
     "        rid = ids.setdefault(request, len(ids))\n"),
).Engine
