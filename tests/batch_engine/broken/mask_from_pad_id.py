"""Broken: the attention mask is built from the token ids (`ids != pad_id`) instead of each
row's length, so a real token equal to the pad id (0, an ordinary id) is masked out."""

from _engine_base import mutate

Engine = mutate(
    "mask_from_pad_id",
    ("            mask.append([0] * gap + [1] * len(feed))\n",
     "            mask.append([0] * gap + [int(t != pad_id) for t in feed])\n"),
).Engine
