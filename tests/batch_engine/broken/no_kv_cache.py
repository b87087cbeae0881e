"""Broken: never reuses the KV cache. Every step starts each row from an empty cache and feeds
its whole sequence (prompt + generated tokens) again (no chunked prefill, which could never
finish a prompt that way). The tokens are right, the work is not."""

from _engine_base import mutate

Engine = mutate(
    "no_kv_cache",
    ("self.chunk = PREFILL_CHUNK if continuous else None", "self.chunk = None"),
    ("    def _batch(self) -> Batch | None:\n",
     "    def _batch(self) -> Batch | None:\n"
     "        for s in self.running:\n"
     "            s.cached = 0\n"
     "        self.cache = BatchCache()\n"),
).Engine
