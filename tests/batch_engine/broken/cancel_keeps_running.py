"""Broken: cancel() sends the abort but leaves a running request in the batch."""

from _engine_base import mutate

Engine = mutate(
    "cancel_keeps_running",
    ("                self._drop([i])\n"
     "                self.on_event(Finish(request_id, \"abort\"))",
     "                self.on_event(Finish(request_id, \"abort\"))"),
).Engine
