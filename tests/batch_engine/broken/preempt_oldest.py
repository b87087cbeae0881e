"""Broken: preempts the oldest running request instead of the newest."""

from _engine_base import mutate

Engine = mutate(
    "preempt_oldest",
    ("        seq = self.running[-1]\n        freed = seq.cached + len(seq.feed(self.chunk))\n"
     "        self._drop([len(self.running) - 1])\n",
     "        seq = self.running[0]\n        freed = seq.cached + len(seq.feed(self.chunk))\n"
     "        self._drop([0])\n"),
).Engine
