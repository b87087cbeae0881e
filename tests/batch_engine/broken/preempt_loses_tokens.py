"""Broken: a preempted request is requeued with its generated tokens thrown away."""

from _engine_base import mutate

Engine = mutate(
    "preempt_loses_tokens",
    ("        seq.cached = 0\n        self.waiting.appendleft(seq)",
     "        seq.cached = 0\n        seq.out.clear()\n        self.waiting.appendleft(seq)"),
).Engine
