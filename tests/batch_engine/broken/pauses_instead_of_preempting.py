"""Broken: when the batch cannot grow, it does not preempt. It keeps the newest rows in the call
but feeds them nothing (an all-padding row) until there is room again: the budget holds and the
outputs are right, but those requests sit on their KV instead of freeing it."""

from _engine_base import mutate

Engine = mutate(
    "pauses_instead_of_preempting",
    ("        while self.budget is not None and held > self.budget and len(self.running) > 1:\n"
     "            held -= self._preempt_newest()",
     "        for s in self.running:\n"
     "            s.paused = False\n"
     "        for s in reversed(self.running[1:]):\n"
     "            if self.budget is None or held <= self.budget:\n"
     "                break\n"
     "            s.paused = True\n"
     "            held -= len(s.feed(self.chunk))"),
    ("feeds = [s.feed(chunk) for s in seqs]",
     "feeds = [[] if getattr(s, \"paused\", False) else s.feed(chunk) for s in seqs]"),
).Engine
