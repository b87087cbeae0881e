"""Broken: the idle continuous engine's size-or-wait test compares `now - submit > max_wait`
(strict) while the static path is right: an idle continuous engine dispatches one scheduler
tick late."""

from _engine_base import mutate

Engine = mutate(
    "continuous_wait_strict",
    ("        if not self.running and not self._due(now):\n            return\n",
     "        if not self.running and not (self.waiting and (\n"
     "                len(self.waiting) >= self.max_batch_size\n"
     "                or now - self.waiting[0].arrival > self.max_wait_s)):\n"
     "            return\n"),
).Engine
