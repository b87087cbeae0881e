"""The inputs of a case, rebuilt from its params in the child (drive) and in the parent (grading).

A case's params are plain JSON the learner can replay: sampling parameters, prompt/output ids and
a logits recipe (`logits_row`). Random logits come from a seeded CPU generator, so a `--seed`
replay draws the same values on every machine; they are then moved to the case's device.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any

import torch

NEUTRAL: dict[str, float] = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
                             "repetition_penalty": 1.0, "presence_penalty": 0.0,
                             "frequency_penalty": 0.0}
PARAM_NAMES = tuple(NEUTRAL)


def logits_row(spec: dict[str, Any]) -> torch.Tensor:
    """One row [V] float32 from a recipe: explicit `values`, or N(0, scale^2) from `seed`
    (rounded to `step` when given: ties), then ids in `neg_inf` set to -inf."""
    if "values" in spec:
        row = torch.tensor([float(x) for x in spec["values"]], dtype=torch.float32)
    else:
        g = torch.Generator().manual_seed(int(spec["seed"]))
        row = torch.randn(int(spec["V"]), generator=g) * float(spec.get("scale", 3.0))
        step = spec.get("step")
        if step:
            row = (row / float(step)).round() * float(step)
    for t in spec.get("neg_inf", []):
        row[int(t)] = float("-inf")
    return row


def row_inputs(p: dict[str, Any], device: str) -> tuple[torch.Tensor, dict[str, Any],
                                                         list[int], list[int]]:
    """A level-1 case: (logits [V], params, prompt ids, output ids)."""
    return (logits_row(p["logits"]).to(device), dict(p["params"]), list(p["prompt"]),
            list(p["output"]))


def batch_inputs(p: dict[str, Any], device: str
                 ) -> tuple[torch.Tensor, list[dict[str, Any]], list[list[int]], list[list[int]]]:
    """A level-2/3 batch: explicit `rows` (each a level-1 case), or `random` rows drawn from a
    seed (the timed case: a fresh batch per call)."""
    if "rows" in p:
        rows = [row_inputs(r, "cpu") for r in p["rows"]] * int(p.get("repeat", 1))
        logits = torch.stack([r[0] for r in rows]).to(device)
        return logits, [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows]
    return random_batch(int(p["seed"]), int(p["B"]), int(p["V"]), int(p.get("history", 64)),
                        device, p.get("top_p_rows"), bool(p.get("penalised", False)),
                        bool(p.get("greedy", False)))


def filtered_rows(params: list[dict[str, Any]], v: int) -> None:
    """Give every request a top-k (< V) or a min-p, so few ids survive per row: the timed
    case's [64, 32000] output then travels back as its few finite entries, not 8 MB per call."""
    for prm in params:
        if not 0 < int(prm["top_k"]) < v and float(prm["min_p"]) == 0.0:
            prm["min_p"] = 0.05


def random_params(rng: random.Random) -> dict[str, Any]:
    """A request's parameters as a serving API sees them: most neutral, some combined."""
    return {"temperature": rng.choice([0.0, 0.3, 0.7, 1.0, 1.0, 1.5]),
            "top_k": rng.choice([0, 0, 1, 20, 50, 100000]),
            "top_p": rng.choice([1.0, 1.0, 1.0, 0.9, 0.5]),
            "min_p": rng.choice([0.0, 0.0, 0.05, 0.2]),
            "repetition_penalty": rng.choice([1.0, 1.0, 1.3, 0.8]),
            "presence_penalty": rng.choice([0.0, 0.0, 0.5, -0.5]),
            "frequency_penalty": rng.choice([0.0, 0.0, 0.2, 1.0])}


def random_batch(seed: int, b: int, v: int, history: int, device: str,
                 top_p_rows: int | None = None, penalised: bool = False, greedy: bool = False
                 ) -> tuple[torch.Tensor, list[dict[str, Any]], list[list[int]], list[list[int]]]:
    """B random requests; `top_p_rows`: the first that many use top-p 0.9 and the rest none
    (None: each request's own draw); `penalised`: every request has a repetition penalty (a
    chat server's common setting); `greedy`: every request greedy (T = 0) with all three
    penalties and no filter, so the penalties are the reference's work beside one argmax per
    row (and the output one finite entry per row). The timed cases call this inside every
    timed round trip, so
    it costs little beside the learner's call: the logits are a fixed N(0, 9) table's rows,
    each call its own row order and rotation of the ids; the histories are drawn as one
    tensor."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(b, generator=g)
    shift = int(torch.randint(v, (), generator=g))
    logits = _table(b, v)[order].roll(shift, dims=1).to(device)
    params = [random_params(rng) for _ in range(b)]
    if top_p_rows is not None:
        for i, prm in enumerate(params):
            prm["top_p"] = 0.9 if i < int(top_p_rows) else 1.0
    if penalised:
        filtered_rows(params, v)
        for prm in params:
            if prm["repetition_penalty"] == 1.0:
                prm["repetition_penalty"] = 1.1
    if greedy:
        for prm in params:
            prm.update(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0,
                       repetition_penalty=rng.choice([1.1, 1.3, 0.8]),
                       frequency_penalty=rng.choice([0.2, 1.0]),
                       presence_penalty=rng.choice([0.5, -0.5]))
    # histories drawn from a pool of 4 x history + 44 ids, so repeats (prompt and output) are common
    pool = torch.randperm(v, generator=g)[: 4 * history + 44]
    ids = pool[torch.randint(len(pool), (2, b, history), generator=g)].tolist()
    return logits, params, ids[0], ids[1]


@lru_cache(maxsize=2)
def _table(b: int, v: int) -> torch.Tensor:
    """A fixed [B, V] table of N(0, 9) logits, drawn once per process (drawing the timed case's
    2·10^6 normals took ~9 ms of CPU per call, beside the reference's ~60 ms)."""
    return torch.randn(b, v, generator=torch.Generator().manual_seed(b * 100003 + v)) * 3.0


def step_batch(batch: dict[str, Any], step: int) -> dict[str, Any]:
    """A level-3 batch at `step`: each random row's logits drawn from seed + 7919 * step (the
    distribution moves every step), explicit rows unchanged."""
    rows = []
    for r in batch["rows"]:
        spec = dict(r["logits"])
        if "seed" in spec:
            spec["seed"] = int(spec["seed"]) + 7919 * step
        rows.append({**r, "logits": spec})
    return {"rows": rows, "repeat": int(batch.get("repeat", 1))}


def seeds(batch: dict[str, Any]) -> list[int]:
    """A level-3 batch's generator seeds: listed, or `seed_from` + row index."""
    if "seeds" in batch:
        return [int(s) for s in batch["seeds"]]
    n = len(batch["rows"]) * int(batch.get("repeat", 1))
    return list(range(int(batch["seed_from"]), int(batch["seed_from"]) + n))
