"""Broken: stop sequences matched by a streaming state per sequence that, on a mismatch, resets
to the start without looking at the token again: with output `x x y` the stop sequence
`[x, y]` is missed (the second `x` should restart the match)."""

from _engine_base import mutate

Engine = mutate(
    "stop_seq_resets_on_mismatch",
    ("        for stop in self.req.stop_sequences:\n"
     "            if stop and tuple(self.out[-len(stop):]) == stop:\n"
     "                return \"stop\"\n",
     "        for j, stop in enumerate(self.req.stop_sequences):\n"
     "            if not stop:\n"
     "                continue\n"
     "            matched = self.__dict__.setdefault('matched', {}).get(j, 0)\n"
     "            matched = matched + 1 if self.out[-1] == stop[matched] else 0\n"
     "            self.matched[j] = matched\n"
     "            if matched == len(stop):\n"
     "                return \"stop\"\n"),
).Engine
