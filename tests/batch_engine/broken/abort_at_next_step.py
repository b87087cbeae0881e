"""Broken: cancel() returns True at once but sends the abort only at the next step()."""

from _engine_base import mutate

Engine = mutate(
    "abort_at_next_step",
    ("                self.waiting.remove(seq)\n"
     "                self.on_event(Finish(request_id, \"abort\"))",
     "                self.waiting.remove(seq)\n"
     "                self.__dict__.setdefault(\"aborts\", []).append(request_id)"),
    ("                self._drop([i])\n"
     "                self.on_event(Finish(request_id, \"abort\"))",
     "                self._drop([i])\n"
     "                self.__dict__.setdefault(\"aborts\", []).append(request_id)"),
    ("        batch = None if self.closed else self.schedule()\n",
     "        for rid in self.__dict__.pop(\"aborts\", []):\n"
     "            self.on_event(Finish(rid, \"abort\"))\n"
     "        batch = None if self.closed else self.schedule()\n"),
).Engine
