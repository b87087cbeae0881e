"""Broken: reserves a request's worst case (prompt + max_tokens - 1 KV tokens) at admission and
never preempts. The budget holds, but requests that fit what they actually hold are kept waiting
and the batch never grows into the budget."""

from _engine_base import mutate

Engine = mutate(
    "reserve_max_no_preempt",
    ("held = sum(s.cached + len(s.feed(self.chunk)) for s in self.running)  # after this step",
     "held = sum(len(s.req.prompt) + s.req.max_tokens - 1 for s in self.running)"),
    ("while self.budget is not None and held > self.budget and len(self.running) > 1:",
     "while False:"),
    ("need = len(self.waiting[0].feed(self.chunk))",
     "need = len(self.waiting[0].req.prompt) + self.waiting[0].req.max_tokens - 1"),
).Engine
