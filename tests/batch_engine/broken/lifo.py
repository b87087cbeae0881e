"""Broken: takes the newest queued requests first (a stack, not a queue)."""

from _engine_base import mutate

Engine = mutate(
    "lifo",
    ("self.running = [self.waiting.popleft() for _ in range(n)]",
     "self.running = [self.waiting.pop() for _ in range(n)]"),
).Engine
