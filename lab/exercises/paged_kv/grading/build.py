"""Building trace cases: fixed operation lists and seeded random traces (parent side)."""

from __future__ import annotations

import random
from typing import Any

from lab.grader.api import Case

TRACE_TIMEOUT_S = 10.0


def toks(n: int, salt: float | str) -> list[int]:
    """n deterministic token ids (distinct salts give unrelated tokens)."""
    rng = random.Random(f"paged-kv/tokens/{salt}")
    return [rng.randrange(2, 4000) for _ in range(n)]


def seqs_of(ops: list[list[Any]]) -> list[int]:
    out: list[int] = []
    for op in ops:
        ids = [op[1], op[2]] if op[0] == "fork" else ([] if op[0] == "can_allocate" else [op[1]])
        for s in ids:
            if s not in out:
                out.append(s)
    return out


def trace(cid: str, level: int, description: str, num_blocks: int, block_size: int,
          ops: list[list[Any]], *, caching: bool = False, report: str | None = None,
          record: str = "full", **extra: Any) -> Case:
    params: dict[str, Any] = {"kind": "trace", "num_blocks": num_blocks,
                              "block_size": block_size, "caching": caching, "ops": ops,
                              "seqs": seqs_of(ops) if record == "full" else [],
                              "record": record, **extra}
    if report:
        params["report"] = report
    size = len(ops) * 10 + num_blocks
    return Case(id=cid, level=level, params=params, size=size, description=description,
                timeout_s=TRACE_TIMEOUT_S, report=report is not None)


class Appender:
    """Small helper for fixed traces: `a.grow(seq, k)` appends k fresh tokens to seq."""

    def __init__(self, salt: str) -> None:
        self.rng = random.Random(f"paged-kv/appender/{salt}")

    def grow(self, seq: int, k: int) -> list[list[Any]]:
        return [["append", seq, self.rng.randrange(2, 4000)] for _ in range(k)]


def random_trace(rng: random.Random, *, num_blocks: int, block_size: int, n_ops: int,
                 forks: bool, caching: bool, docs: list[list[int]] | None = None
                 ) -> list[list[Any]]:
    """Seeded operations that keep the manager near full: allocations of boundary sizes (0, 1,
    block_size - 1, block_size, block_size + 1, several blocks), appends across block
    boundaries, frees, forks, can_allocate, and now and then a call that must fail. `docs`
    (prefix caching) makes prompts start with shared prefixes."""
    bs = block_size
    live: dict[int, int] = {}
    next_id = 0
    ops: list[list[Any]] = []
    for _ in range(n_ops):
        r = rng.random()
        if not live or r < 0.28:
            n = rng.choice([0, 1, bs - 1, bs, bs + 1, rng.randint(1, 3 * bs), 2 * bs])
            n = max(0, n)
            if docs:
                doc = rng.choice(docs)
                n = rng.choice([len(doc), rng.randint(0, len(doc)), len(doc) + rng.randint(1, bs)])
                prompt = (doc + toks(bs * 2, rng.random()))[:n]
            else:
                prompt = [rng.randrange(2, 4000) for _ in range(n)]
            if rng.random() < 0.15:
                ops.append(["can_allocate", prompt])
            sid = next_id if rng.random() > 0.03 or not live else rng.choice(list(live))
            ops.append(["allocate", sid, prompt])
            if sid == next_id:
                live[sid] = n
                next_id += 1
        elif r < 0.70:
            sid = rng.choice(list(live))
            for _ in range(rng.choice([1, 1, 2, bs])):
                ops.append(["append", sid, rng.randrange(2, 4000)])
                live[sid] += 1
        elif forks and r < 0.82:
            parent = rng.choice(list(live))
            ops.append(["fork", parent, next_id])
            live[next_id] = live[parent]
            next_id += 1
        else:
            sid = rng.choice(list(live))
            ops.append(["free", sid])
            del live[sid]
            if rng.random() < 0.05:
                ops.append(["free", sid])  # a second free must raise ValueError
    ops.extend(["free", sid] for sid in list(live))
    return ops
