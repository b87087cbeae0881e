"""Level 3 — automatic prefix caching (hash-chained full blocks, LRU eviction).

Boundaries and interacting features, one case each (block_size 4 unless said):
- a shared system prompt of 3.5 blocks: the 3 full blocks are hits for every request, the partial
  one never is (partial blocks are never shared);
- two prompts identical up to a partial block; a prompt that is entirely cached (n = 2 blocks);
- the hash is chained: the same block of tokens after a different prefix is no hit;
- freed blocks stay cached while empty blocks remain; evicted only when a new block is needed,
  least recently released first (free releases a table from its last block to its first);
- multi-turn chats that resend their history: the previous turn's prompt and reply are hits
  (blocks filled by appends are cached too);
- a cache smaller than the working set: documents cycled through 8 blocks, evictions and hits
  exact;
- fork + prefix cache (a forked child's copy-on-write and the blocks it fills become cached);
  a child and its parent each fill their own copy of the shared partial block: each one's hash
  chains over its own blocks, and the parent's whole sequence is a hit later
  (`fork-then-both-fill`);
  eviction + fork (blocks a live child still holds are never evicted);
- two blocks that fill with the same tokens after the same prefix (two requests, or a fork and
  its parent, appending the same tokens): the first one registered stays the cached one, the
  second is not registered (`duplicate-full-block`);
- can_allocate is a query: it does not refresh the blocks it would hit, so the least recently
  released block is still evicted first after it (`can-allocate-changes-nothing`);
- can_allocate counts a free cached block it would reuse once; a hit on a block another live
  sequence holds needs no free block at all;
- a report workload (system prompts, chats, a small cache): hit rate and blocks saved;
- seeded workloads built from shared documents.
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.paged_kv.grading.build import Appender, random_trace, toks, trace
from lab.grader.api import Case


def _l3(cid: str, description: str, num_blocks: int, ops: list[list[Any]], bs: int = 4,
        report: str | None = None) -> Case:
    return trace(cid, 3, description, num_blocks, bs, ops, caching=True, report=report)


def cases(seed: int) -> list[Case]:
    a = Appender("l3")
    system = toks(14, "sys")
    out = [
        _l3("shared-system-prompt", "5 requests = one 14-token system prompt + 3 own tokens: "
            "the 3 full system blocks are hits for requests 2-5, the partial block never is",
            32, [["allocate", s, system + toks(3, f"u{s}")] for s in range(5)]
            + [["free", 1], ["free", 0], ["allocate", 5, system + toks(2, "u5")]]),
        _l3("partial-block-never-shared", "two identical 6-token prompts: the full block is a "
            "hit, the partial one is fresh for each", 8,
            [["allocate", 0, toks(6, 60)], ["allocate", 1, toks(6, 60)], *a.grow(0, 2),
             *a.grow(1, 2), ["free", 0], ["free", 1], ["allocate", 2, toks(6, 60)]]),
        _l3("whole-prompt-cached", "an 8-token prompt freed then sent again: all 8 tokens are "
            "hits", 6, [["allocate", 0, toks(8, 61)], ["free", 0], ["allocate", 1, toks(8, 61)],
                        *a.grow(1, 1)]),
        _l3("hash-chains-parent", "two prompts share their second block's tokens after "
            "different first blocks, and a prompt starts with a cached second block: no hit "
            "(the KV of a block depends on its prefix)", 8,
            [["allocate", 0, toks(4, 62) + toks(4, 63)],
             ["allocate", 1, toks(4, 64) + toks(4, 63)],
             ["allocate", 2, toks(4, 63) + toks(2, 66)],
             ["allocate", 3, toks(4, 62) + toks(4, 63) + toks(2, 65)]]),
        _l3("freed-blocks-stay-cached", "a freed prompt stays cached while empty blocks remain; "
            "a later identical prompt hits all its full blocks", 8,
            [["allocate", 0, toks(12, 66)], ["free", 0], ["allocate", 1, toks(8, 67)],
             ["allocate", 2, toks(12, 66) + toks(1, 68)]]),
        _l3("evict-only-when-needed-lru", "6 blocks: two prompts freed (tails released first); "
            "empty blocks go first, then the least recently released cached block", 6,
            [["allocate", 0, toks(8, 69)], ["allocate", 1, toks(8, 70)], ["free", 0],
             ["free", 1], ["allocate", 2, toks(8, 71)], ["allocate", 3, toks(4, 72)],
             ["allocate", 4, toks(8, 69)], ["allocate", 5, toks(4, 70)]]),
        _l3("multi-turn-chat", "a chat resends its whole history each turn: the previous "
            "prompt and reply (blocks filled by appends) are hits", 24, _chat(a)),
        _l3("cache-smaller-than-working-set", "4 documents of 3 blocks cycled through 8 "
            "blocks: every miss evicts the least recently used; hits and evictions exact", 8,
            _cycle()),
        _l3("fork-with-prefix-cache", "fork a cached prompt: the copy-on-write block and the "
            "blocks filled after it become cached for a later request", 10, _fork_cache(a)),
        _l3("fork-then-both-fill", "a child and its parent each fill their own copy of the "
            "shared partial block; later the parent's whole sequence is sent again: its 2 full "
            "blocks are hits (after a fork each sequence's hash chain is its own)", 8,
            _fork_both_fill()),
        _l3("eviction-with-live-fork", "blocks a live child still holds are never evicted, even "
            "after its parent is freed; when only those remain, OutOfBlocks", 5,
            [["allocate", 0, toks(8, 73)], ["fork", 0, 1], ["free", 0],
             ["allocate", 2, toks(4, 74)], ["free", 2], ["allocate", 3, toks(8, 75)],
             ["allocate", 4, toks(12, 76)], ["allocate", 5, toks(4, 77)], ["free", 1],
             ["allocate", 6, toks(8, 73)]]),
        _l3("can-allocate-counts-hits", "a free cached block a prompt reuses counts once; a hit "
            "on a block another sequence holds needs no free block", 4,
            [["allocate", 0, toks(8, 78)], ["free", 0], ["allocate", 1, toks(8, 79)],
             ["can_allocate", toks(8, 78) + toks(4, 80)],
             ["allocate", 2, toks(8, 78) + toks(4, 80)], ["can_allocate", toks(8, 78)],
             ["allocate", 2, toks(8, 78)], ["can_allocate", toks(8, 78)],
             ["allocate", 3, toks(8, 78)], ["allocate", 4, toks(8, 79)], ["free", 2],
             ["free", 3], ["free", 1], ["free", 4]]),
        _l3("duplicate-full-block", "two requests with the same 6-token prompt, then a fork, "
            "append the same tokens: the block registered first under a hash stays the cached "
            "one (a later identical block is not registered and does not replace it)", 10,
            _duplicate()),
        _l3("can-allocate-changes-nothing", "two cached prompts freed in turn; can_allocate "
            "of the first one is only a question: the next eviction still takes the least "
            "recently released block (the first prompt's)", 4,
            [["allocate", 0, toks(4, 94)], ["allocate", 1, toks(4, 95)], ["free", 0],
             ["free", 1], ["can_allocate", toks(4, 94)], ["allocate", 2, toks(12, 96)],
             ["allocate", 3, toks(4, 95)]]),
        _l3("block-size-1-cache", "block_size 1: every token is a full block, so every cached "
            "prefix token is a hit", 10,
            [["allocate", 0, toks(5, 81)], ["free", 0], ["allocate", 1, toks(3, 81)],
             ["allocate", 2, toks(5, 81) + toks(2, 82)]], bs=1),
        _workload("report-cache-workload", seed, report="cache"),
    ]
    rng = random.Random(f"paged-kv/3/{seed}")
    docs = [toks(rng.randint(4, 20), f"doc{seed}/{k}") for k in range(4)]
    for j, (nb, bs) in enumerate([(12, 2), (16, 4), (10, 4)]):
        ops = random_trace(rng, num_blocks=nb, block_size=bs, n_ops=70, forks=j == 2,
                           caching=True, docs=docs)
        out.append(trace(f"hidden-{seed}-{j}", 3, f"seeded workload over shared documents, "
                         f"{nb} blocks of {bs}" + (", with forks" if j == 2 else ""), nb, bs,
                         ops, caching=True))
    return out


def _chat(a: Appender) -> list[list[Any]]:
    ops: list[list[Any]] = []
    history = toks(10, "chat-u1")
    for turn in range(4):
        sid = 10 + turn
        ops.append(["allocate", sid, list(history)])
        reply = a.grow(sid, 7)
        ops += reply
        ops.append(["free", sid])
        history += [op[2] for op in reply] + toks(5, f"chat-u{turn + 2}")
    return ops


def _duplicate() -> list[list[Any]]:
    prompt, tail = toks(6, 90), toks(2, 91)
    same = [["append", s, t] for s in (0, 1) for t in tail]
    return [["allocate", 0, prompt], ["allocate", 1, prompt], *same, ["free", 0],
            ["allocate", 2, prompt + tail + toks(1, 92)], ["free", 1], ["free", 2],
            ["allocate", 3, prompt], ["fork", 3, 4], *[["append", s, t] for s in (4, 3)
                                                       for t in tail],
            ["free", 3], ["allocate", 5, prompt + tail], ["free", 4], ["free", 5],
            ["allocate", 6, toks(24, 93)], ["allocate", 7, prompt + tail]]


def _cycle() -> list[list[Any]]:
    docs = [toks(12, f"cycle{k}") for k in range(4)]
    ops: list[list[Any]] = []
    for n, k in enumerate([0, 1, 0, 2, 1, 3, 0, 3, 2, 2, 1, 0]):
        ops += [["allocate", n, docs[k] + toks(1, f"q{n}")], ["free", n]]
    return ops


def _fork_both_fill() -> list[list[Any]]:
    """Parent 0 (6 tokens) forks child 1; the child fills its copy of the partial block, then
    the parent fills its own; both leave, and the parent's whole sequence comes back: its 2 full
    blocks are hits (each sequence's hash chain is its own after the fork)."""
    prompt, child, parent = toks(6, 90), toks(2, 91), toks(2, 92)
    return [["allocate", 0, prompt], ["fork", 0, 1],
            *[["append", 1, t] for t in child], *[["append", 0, t] for t in parent],
            ["free", 1], ["free", 0], ["allocate", 2, prompt + parent + toks(2, 93)]]


def _fork_cache(a: Appender) -> list[list[Any]]:
    prompt = toks(10, 83)
    ops: list[list[Any]] = [["allocate", 0, prompt], ["fork", 0, 1]]
    grown = a.grow(0, 3)
    ops += grown + a.grow(1, 1) + [["free", 0]]
    ops.append(["allocate", 2, prompt + [op[2] for op in grown] + toks(2, 84)])
    return [*ops, ["free", 1], ["free", 2]]


def _workload(cid: str, seed: int, report: str | None = None) -> Case:
    """System prompts, multi-turn chats and one-off prompts through a cache smaller than the
    working set."""
    rng = random.Random(f"paged-kv/3/workload/{seed}")
    bs, nb = 4, 40
    systems = [toks(rng.randint(9, 22), f"w{seed}sys{k}") for k in range(3)]
    chats: dict[int, list[int]] = {}
    ops: list[list[Any]] = []
    for sid in range(40):
        r = rng.random()
        if r < 0.45:
            prompt = rng.choice(systems) + toks(rng.randint(1, 9), rng.random())
        elif r < 0.85:
            c = rng.randrange(4)
            chats[c] = chats.get(c, rng.choice(systems)) + toks(rng.randint(2, 6), rng.random())
            prompt = list(chats[c])
        else:
            prompt = toks(rng.randint(4, 20), rng.random())
        ops.append(["allocate", sid, prompt])
        reply = [rng.randrange(2, 4000) for _ in range(rng.randint(1, 8))]
        ops += [["append", sid, t] for t in reply]
        if r >= 0.45 and r < 0.85:
            chats[c] = prompt + reply
        ops.append(["free", sid])
    return trace(cid, 3, "a mixed workload: 3 system prompts, 4 multi-turn chats, one-off "
                 f"prompts, through {nb} blocks (smaller than the working set); hit rate and "
                 "blocks saved", nb, bs, ops, caching=True, report=report)
