"""Level 1 — block allocator and block tables (no forks, no prefix caching).

Boundaries and special values, one case each (block_size 4 unless said):
- sequence id 0 and block id 0 (`if seq_id:` / `if block:` bugs), in `seq-0-block-0`;
- exactly full blocks (8 tokens), then one more token (+1 opens a block), in `seq-0-block-0`;
- a partly filled last block filled to the brim by appends (offsets 2, 3, then a new block);
- an empty allocation (n_tokens = 0: empty table, no block) and its first append;
- block_size 1 (every token its own block);
- running out exactly at the last block (the last free block is handed out, the next request
  raises OutOfBlocks), an append that needs a block when none is free, and a failed allocate
  that must change nothing (all-or-nothing), then one that fits;
- freed blocks are reused lowest id first;
- misuse raises ValueError: allocate of a live sequence, append/free of an unknown or freed one;
- sequence ids are any ints: -1, -2 and 10**12 (`negative-and-huge-seq-ids`);
- seeded random traces near capacity (block sizes 1, 2, 4, 16) for whatever the fixed ones miss.
Every case checks invariants after every operation (tables of ceil(tokens / block_size) blocks,
no block in two tables, num_free exact, every token still where its table says) and compares the
trace exactly with the reference.
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.paged_kv.grading.build import Appender, random_trace, toks, trace
from lab.grader.api import Case


def cases(seed: int) -> list[Case]:
    a = Appender("l1")
    out = [
        trace("seq-0-block-0", 1, "seq id 0 gets block 0; 5 tokens then appends to exactly 8 "
              "(two full blocks), one more opens block 2; freed blocks are reused", 6, 4,
              [["allocate", 0, toks(5, 1)], *a.grow(0, 3), *a.grow(0, 1), ["free", 0],
               ["allocate", 1, toks(4, 2)], ["allocate", 2, toks(9, 3)]]),
        trace("partial-block-append", 1, "6 tokens in blocks of 4: appends at offsets 2 and 3 "
              "stay in the last block, the next opens a new one", 8, 4,
              [["allocate", 7, toks(6, 4)], *a.grow(7, 3), ["allocate", 8, toks(3, 5)],
               *a.grow(8, 2), *a.grow(7, 2)]),
        trace("empty-allocation", 1, "allocate 0 tokens: an empty table and no block; the first "
              "append takes a block at offset 0", 4, 4,
              [["can_allocate", []], ["allocate", 3, []], ["allocate", 4, toks(2, 6)],
               *a.grow(3, 1), *a.grow(3, 4), ["free", 3], ["free", 4]]),
        trace("block-size-1", 1, "block_size 1: every token is a block; run out, free, go on",
              6, 1,
              [["allocate", 0, toks(3, 7)], *a.grow(0, 2), ["can_allocate", toks(1, 8)],
               ["allocate", 1, toks(1, 8)], ["can_allocate", toks(1, 9)], *a.grow(1, 1),
               ["free", 0], *a.grow(1, 1), ["allocate", 2, toks(4, 10)], *a.grow(2, 1)]),
        trace("out-of-blocks-at-last-block", 1, "5 blocks: 12 + 8 tokens take exactly all of "
              "them; then allocate and append must raise OutOfBlocks and change nothing; a "
              "failed allocate that needs 3 blocks with 2 free leaves nothing behind", 5, 4,
              [["allocate", 0, toks(12, 11)], ["can_allocate", toks(8, 12)],
               ["allocate", 1, toks(8, 12)], ["can_allocate", toks(1, 13)],
               ["allocate", 2, toks(1, 13)], *a.grow(0, 1), *a.grow(1, 1),
               ["allocate", 2, []], ["free", 1], ["allocate", 3, toks(9, 14)],
               ["can_allocate", toks(8, 15)], ["allocate", 3, toks(8, 15)], *a.grow(2, 1),
               ["free", 0], *a.grow(2, 1)]),
        trace("free-reuses-lowest", 1, "freed blocks go back to the pool and the lowest-"
              "numbered free block is handed out first", 8, 4,
              [["allocate", 0, toks(8, 16)], ["allocate", 1, toks(8, 17)],
               ["allocate", 2, toks(4, 18)], ["free", 1], ["allocate", 3, toks(12, 19)],
               ["free", 0], ["allocate", 4, toks(1, 20)], *a.grow(4, 4), ["free", 2],
               ["free", 3], ["free", 4]]),
        trace("misuse-raises-valueerror", 1, "allocate of a live sequence, append and free of "
              "unknown or freed sequences raise ValueError and change nothing", 4, 4,
              [["allocate", 0, toks(4, 21)], ["allocate", 0, toks(4, 22)],
               ["append", 9, 5], ["free", 9], ["free", 0], ["free", 0], ["append", 0, 5],
               ["allocate", 0, toks(2, 23)]]),
        trace("negative-and-huge-seq-ids", 1, "sequence ids -1, -2 and 10**12 are ids like any "
              "other (a list indexed by id wraps around on -1)", 8, 4,
              [["allocate", -1, toks(5, 24)], ["allocate", 10**12, toks(3, 25)],
               ["allocate", -2, toks(4, 26)], *a.grow(-1, 3), ["free", -2],
               *a.grow(10**12, 1), ["free", -1], ["append", -1, 7], ["allocate", -1, toks(2, 27)],
               ["free", 10**12], ["free", -1]]),
        trace("interleaved-growth", 1, "four sequences growing in turns across block "
              "boundaries, finishing at different times", 16, 4, _interleaved(a)),
    ]
    rng = random.Random(f"paged-kv/1/{seed}")
    for j, (nb, bs) in enumerate([(8, 1), (12, 2), (16, 4), (6, 16)]):
        ops = random_trace(rng, num_blocks=nb, block_size=bs, n_ops=60, forks=False,
                           caching=False)
        out.append(trace(f"hidden-{seed}-{j}", 1, f"seeded random trace, {nb} blocks of {bs}",
                         nb, bs, ops))
    return out


def _interleaved(a: Appender) -> list[list[Any]]:
    ops: list[list[Any]] = [["allocate", s, toks(n, 30 + s)]
                            for s, n in [(0, 3), (1, 4), (2, 5), (3, 1)]]
    for r in range(9):
        for s in range(4):
            if (s, r) in {(1, 5), (3, 7)}:
                ops.append(["free", s])
            elif not (s == 1 and r > 5) and not (s == 3 and r > 7):
                ops += a.grow(s, 1)
    return [*ops, ["free", 0], ["free", 2]]
