"""Broken: shutdown() aborts every request it ever saw, including finished ones."""

from _engine_base import mutate

Engine = mutate(
    "double_finish",
    ("self.waiting.append(_Seq(rid, request, self.clock()))",
     "self.waiting.append(_Seq(rid, request, self.clock()))\n"
     "        self.__dict__.setdefault(\"seen\", []).append(self.waiting[-1])"),
    ("for seq in [*self.running, *self.waiting]:", "for seq in self.__dict__.get(\"seen\", []):"),
).Engine
