# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: in a step where a newcomer prefills, the running rows feed nothing (all padding), so
their decode stalls for that step (a prefill-first scheduler inside one call)."""

from _engine_base import mutate

Engine = mutate(
    "prefill_stalls_decode",
    ("        feeds = [s.feed(chunk) for s in seqs]\n",
     "        feeds = [s.feed(chunk) for s in seqs]\n"
     "        if any(s.cached < len(s.req.prompt) for s in seqs):\n"
     "            feeds = [f if s.cached < len(s.req.prompt) else [] for s, f in zip(seqs, feeds)]\n"),
).Engine
