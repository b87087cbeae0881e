"""Broken: pads the shorter prompts on the right, so their last column is padding."""

from _engine_base import mutate

Engine = mutate(
    "right_padding",
    ("ids.append([pad_id] * gap + feed)", "ids.append(feed + [pad_id] * gap)"),
    ("mask.append([0] * gap + [1] * len(feed))",
     "mask.append([1] * len(feed) + [0] * gap)"),
    ("positions.append([0] * gap + list(range(seq.cached, seq.cached + len(feed))))",
     "positions.append(list(range(seq.cached, seq.cached + len(feed))) + [0] * gap)"),
).Engine
