"""Broken: cancelling a running request drops its row but keeps counting its KV tokens against
the budget (a leaked reservation), so requests waiting for KV are admitted late."""

from _engine_base import mutate

Engine = mutate(
    "cancel_leaks_kv",
    ("                self._drop([i])\n"
     "                self.on_event(Finish(request_id, \"abort\"))",
     "                self.__dict__[\"leaked\"] = self.__dict__.get(\"leaked\", 0) + seq.cached\n"
     "                self._drop([i])\n"
     "                self.on_event(Finish(request_id, \"abort\"))"),
    ("held = sum(s.cached + len(s.feed(self.chunk)) for s in self.running)  # after this step",
     "held = sum(s.cached + len(s.feed(self.chunk)) for s in self.running)\n"
     "        held += self.__dict__.get(\"leaked\", 0)"),
).Engine
