"""A correct engine without chunked prefill: a newcomer (or a preempted request, recomputed)
feeds its whole sequence in the step it joins, so it is admitted under a KV budget only when all
of it fits. Correct at every level (and within the level 2 latency gate on the probe cost model)."""

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "broken"))
from _engine_base import mutate

Engine = mutate(
    "whole_prompt_engine",
    ("self.chunk = PREFILL_CHUNK if continuous else None", "self.chunk = None"),
).Engine
