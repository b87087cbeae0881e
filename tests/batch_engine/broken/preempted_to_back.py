"""Broken: a preempted request is requeued at the back, behind the requests that were waiting."""

from _engine_base import mutate

Engine = mutate(
    "preempted_to_back",
    ("        seq.cached = 0\n        self.waiting.appendleft(seq)",
     "        seq.cached = 0\n        self.waiting.append(seq)"),
).Engine
