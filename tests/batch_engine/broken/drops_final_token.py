"""Broken: the token that finishes a request (stop token or the last one) is not streamed."""

from _engine_base import mutate

Engine = mutate(
    "drops_final_token",
    ("            self.on_event(Token(seq.rid, token))\n"
     "            reason = seq.finish_reason()\n",
     "            reason = seq.finish_reason()\n"
     "            if reason is None:\n"
     "                self.on_event(Token(seq.rid, token))\n"),
).Engine
