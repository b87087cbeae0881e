"""Broken: submit() checks only the prompt's first token id against the vocabulary."""

from _engine_base import mutate

Engine = mutate(
    "token_check_first_only",
    ("        bad = [t for t in req.prompt if not 0 <= t < vocab]\n",
     "        bad = [t for t in req.prompt[:1] if not 0 <= t < vocab]\n"),
).Engine
