"""Broken: cancel() finds a running request's row in a map built when the step was scheduled;
after one cancel drops its row the rows shift, so a second cancel before the next step drops
the wrong row (its own keeps streaming after its abort)."""

from _engine_base import mutate

Engine = mutate(
    "cancel_stale_row",
    ("        for i, seq in enumerate(self.running):\n"
     "            if seq.rid == request_id:\n"
     "                self._drop([i])\n",
     "        for seq in self.running:\n"
     "            if seq.rid == request_id:\n"
     "                self._drop([self.rows_at_step.get(request_id, 0)])\n"),
    ("        return self._batch()\n\n    def _batch(self)",
     "        self.rows_at_step = {s.rid: i for i, s in enumerate(self.running)}\n"
     "        return self._batch()\n\n    def _batch(self)"),
    ("        self.running: list[_Seq] = []  # in admission order = the cache's row order\n",
     "        self.running: list[_Seq] = []  # in admission order = the cache's row order\n"
     "        self.rows_at_step: dict[int, int] = {}\n"),
).Engine
