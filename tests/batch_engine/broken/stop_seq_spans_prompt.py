"""Broken: matches stop sequences against the prompt and the output together, so a prompt that
ends with the start of a stop sequence stops the request on its first matching token."""

from _engine_base import mutate

Engine = mutate(
    "stop_seq_spans_prompt",
    ("            if stop and tuple(self.out[-len(stop):]) == stop:",
     "            if stop and tuple([*self.req.prompt, *self.out][-len(stop):]) == stop:"),
).Engine
