"""Broken: after a poison request fails, the others are rerun from an empty cache (each
recomputes its whole sequence) instead of keeping their KV. The tokens are right, the work is
not."""

from _engine_base import mutate

Engine = mutate(
    "poison_resets_cache",
    ("            self._drop(bad)\n            return None",
     "            self._drop(bad)\n"
     "            for s in self.running:\n"
     "                s.cached = 0\n"
     "            self.cache = BatchCache()\n"
     "            return None"),
).Engine
