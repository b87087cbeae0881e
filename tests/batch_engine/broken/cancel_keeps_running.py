"""Broken: cancel() sends the abort but leaves a running request in the batch."""

from _base import mutate

Engine = mutate(
    "cancel_keeps_running",
    ("        for i, seq in enumerate(self.running):\n            if seq.rid == request_id:\n",
     "        for i, seq in enumerate(self.running):\n            if seq.rid == request_id:\n"
     "                self.on_event(Finish(request_id, \"abort\"))\n"
     "                return True\n"),
).Engine
