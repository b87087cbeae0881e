# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: admission counts only the KV the running requests already hold, not the token each
feeds this step, so the batch can leave the cache over the budget after the call."""

from _engine_base import mutate

Engine = mutate(
    "admit_ignores_growth",
    ("        held = sum(s.cached + len(s.feed(self.chunk)) for s in self.running)  # after this step\n"
     "        while self.budget is not None and held > self.budget and len(self.running) > 1:\n"
     "            held -= self._preempt_newest()\n",
     "        held = sum(s.cached + len(s.feed(self.chunk)) for s in self.running)  # after this step\n"
     "        while self.budget is not None and held > self.budget and len(self.running) > 1:\n"
     "            held -= self._preempt_newest()\n"
     "        held = sum(s.cached for s in self.running)\n"),
).Engine
