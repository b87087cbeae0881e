# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: requests preempted in one step go back to the queue in the order they were preempted
(newest first), each behind the ones preempted before it in that step, so the newest of them
resumes first: the older one, which also arrived first, is overtaken."""

from _engine_base import mutate

Engine = mutate(
    "resume_newest_first",
    ("        while self.budget is not None and held > self.budget and len(self.running) > 1:\n"
     "            held -= self._preempt_newest()\n",
     "        self.front = 0\n"
     "        while self.budget is not None and held > self.budget and len(self.running) > 1:\n"
     "            held -= self._preempt_newest()\n"),
    ("        self.waiting.appendleft(seq)\n        return freed\n",
     "        self.waiting.insert(self.front, seq)\n        self.front += 1\n        return freed\n"),
).Engine
