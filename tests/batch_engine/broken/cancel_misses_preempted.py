"""Broken: cancel() looks for queued requests that have not started yet, so a preempted request
waiting to resume (it has output) is not found: False, and it runs on."""

from _engine_base import mutate

Engine = mutate(
    "cancel_misses_preempted",
    ("        for seq in self.waiting:\n            if seq.rid == request_id:\n",
     "        for seq in self.waiting:\n            if seq.rid == request_id and not seq.out:\n"),
).Engine
