"""Broken: the wait for a static batch starts when the idle engine first looks at the queue
(TorchServe / Ray Serve), not at each request's submit, so a request that queued behind a busy
batch waits max_wait again once the batch is done."""

from _engine_base import mutate

Engine = mutate(
    "wait_from_pickup",
    ("    def _admit_static(self, now: float) -> None:\n        if self._due(now):\n",
     "    def _admit_static(self, now: float) -> None:\n"
     "        if self.waiting and getattr(self, 'picked', None) is None:\n"
     "            self.picked = now\n"
     "        if self.waiting and (len(self.waiting) >= self.max_batch_size\n"
     "                             or now - self.picked >= self.max_wait_s):\n"
     "            self.picked = None\n"),
).Engine
