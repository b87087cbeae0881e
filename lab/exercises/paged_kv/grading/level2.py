"""Level 2 — fork with copy-on-write (parallel sampling, beam search).

Boundaries and interacting features, one case each (block_size 4 unless said):
- fork of a sequence whose last block is partly filled: the first append on either side copies
  it (src, dst) and the other side then writes in place (its reference count is back to 1);
- fork of a sequence whose last block is exactly full: no copy at all, both open new blocks;
- free of a parent with a live child: nothing is released, and the child then writes in place;
- reference counts through fork-of-fork and three children freed in any order: blocks are
  released only when the last holder is freed;
- fork of an empty sequence (n_tokens = 0) and block/sequence id 0;
- a copy-on-write that needs a block when none is free raises OutOfBlocks and changes nothing;
- misuse: fork of an unknown parent, fork into a live id (also itself) raise ValueError;
- seeded random traces with forks near capacity.
"""

from __future__ import annotations

import random

from lab.exercises.paged_kv.grading.build import Appender, random_trace, toks, trace
from lab.grader.api import Case


def cases(seed: int) -> list[Case]:
    a = Appender("l2")
    out = [
        trace("cow-partial-last-block", 2, "fork a 6-token sequence (last block half full): the "
              "parent's first append copies the shared block, the child then writes in place",
              8, 4, [["allocate", 0, toks(6, 40)], ["fork", 0, 1], *a.grow(0, 1), *a.grow(1, 1),
                     *a.grow(0, 2), *a.grow(1, 3), ["free", 0], ["free", 1]]),
        trace("child-appends-first", 2, "after a fork the child appends first: the child gets "
              "the copy, the parent keeps the block", 8, 4,
              [["allocate", 0, toks(5, 41)], ["fork", 0, 1], *a.grow(1, 1), *a.grow(0, 1),
               ["free", 1], *a.grow(0, 3)]),
        trace("no-cow-on-full-block", 2, "fork an 8-token sequence (last block exactly full): "
              "nothing is copied, each side opens its own block", 8, 4,
              [["allocate", 0, toks(8, 42)], ["fork", 0, 1], *a.grow(0, 1), *a.grow(1, 1),
               *a.grow(1, 3), ["free", 1], ["free", 0]]),
        trace("free-parent-with-live-child", 2, "free the parent while its child lives: no block "
              "is released, and the child's next append writes in place (refcount 1)", 6, 4,
              [["allocate", 0, toks(6, 43)], ["fork", 0, 1], ["free", 0], *a.grow(1, 1),
               *a.grow(1, 2), ["free", 1]]),
        trace("refcount-zero-only", 2, "three children and a grandchild share blocks; they are "
              "released only when the last holder is freed", 8, 4,
              [["allocate", 0, toks(5, 44)], ["fork", 0, 1], ["fork", 0, 2], ["fork", 1, 3],
               ["free", 0], ["free", 2], *a.grow(3, 1), ["free", 1], ["free", 3],
               ["allocate", 4, toks(16, 45)]]),
        trace("fork-empty-sequence", 2, "fork of a sequence with 0 tokens: both tables stay "
              "empty; each first append takes its own block (no copy)", 4, 4,
              [["allocate", 0, []], ["fork", 0, 1], *a.grow(0, 1), *a.grow(1, 1), ["free", 0],
               ["free", 1]]),
        trace("cow-out-of-blocks", 2, "every block in use: the copy-on-write append raises "
              "OutOfBlocks and changes nothing; after a free it copies", 3, 4,
              [["allocate", 0, toks(6, 46)], ["fork", 0, 1], ["allocate", 2, toks(4, 47)],
               *a.grow(0, 1), *a.grow(1, 1), ["free", 2], *a.grow(0, 1), *a.grow(1, 1)]),
        trace("fork-misuse", 2, "fork of an unknown parent or into a live id raises ValueError "
              "and changes nothing", 6, 4,
              [["fork", 9, 1], ["allocate", 0, toks(3, 48)], ["fork", 0, 0], ["fork", 0, 1],
               ["fork", 0, 1], ["free", 1], ["fork", 0, 1], *a.grow(1, 1)]),
        trace("beam-of-four", 2, "one prompt forked into four beams that append in turns and "
              "finish at different times (parallel sampling)", 12, 4, _beams(a)),
        trace("fork-block-size-1", 2, "block_size 1: a block is always full, so a fork never "
              "copies", 6, 1, [["allocate", 0, toks(2, 49)], ["fork", 0, 1], *a.grow(0, 1),
                               *a.grow(1, 1), ["free", 0], *a.grow(1, 2)]),
    ]
    rng = random.Random(f"paged-kv/2/{seed}")
    for j, (nb, bs) in enumerate([(10, 2), (16, 4), (24, 4), (8, 16)]):
        ops = random_trace(rng, num_blocks=nb, block_size=bs, n_ops=70, forks=True,
                           caching=False)
        out.append(trace(f"hidden-{seed}-{j}", 2, f"seeded random trace with forks, {nb} "
                         f"blocks of {bs}", nb, bs, ops))
    return out


def _beams(a: Appender) -> list[list[object]]:
    ops: list[list[object]] = [["allocate", 0, toks(7, 50)], ["fork", 0, 1], ["fork", 0, 2],
                               ["fork", 0, 3]]
    for r in range(6):
        for s in range(4):
            if (s, r) == (2, 2):
                ops.append(["free", 2])
            elif not (s == 2 and r >= 2):
                ops += a.grow(s, 1)
    return ops + [["free", s] for s in (0, 1, 3)]
