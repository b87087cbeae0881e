"""Broken: checks max_tokens before the stops, so a stop token or stop sequence landing on the
max_tokens-th token finishes with "length" instead of "stop"."""

from _engine_base import mutate

Engine = mutate(
    "length_before_stop",
    ("        if self.out[-1] in self.req.stop_token_ids:\n",
     "        if len(self.out) >= self.req.max_tokens:\n"
     "            return \"length\"\n"
     "        if self.out[-1] in self.req.stop_token_ids:\n"),
).Engine
