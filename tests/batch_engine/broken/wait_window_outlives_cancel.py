"""Broken: the batching window opens at the first submit into an idle engine and closes only
when a batch starts, so after the only queued request is cancelled the next arrival inherits
the cancelled one's deadline and goes early."""

from _engine_base import mutate

Engine = mutate(
    "wait_window_outlives_cancel",
    ("        return bool(self.waiting) and (len(self.waiting) >= self.max_batch_size\n"
     "                                       or now - self.waiting[0].arrival >= self.max_wait_s)",
     "        opened = self.__dict__.get('_opened')\n"
     "        if opened is None or not self.waiting:\n"
     "            return bool(self.waiting) and len(self.waiting) >= self.max_batch_size\n"
     "        return len(self.waiting) >= self.max_batch_size or now - opened >= self.max_wait_s"),
    ("            self.waiting.append(_Seq(rid, request, self.clock()))\n",
     "            self.waiting.append(_Seq(rid, request, self.clock()))\n"
     "            if self.__dict__.get('_opened') is None:\n"
     "                self._opened = self.clock()\n"),
    ("        if not self.running and not self._due(now):\n            return\n",
     "        if not self.running and not self._due(now):\n            return\n"
     "        self._opened = None\n"),
).Engine
