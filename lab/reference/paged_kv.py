"""Reference for `paged-kv`: a vLLM-style block manager and a vectorised paged-attention gather.

`BlockManager` keeps, per block, a reference count; per sequence, its block table and tokens.
- Allocation hands out the lowest-numbered empty block; with prefix caching, a full block is
  registered under a hash chained over its parent block's hash and its own tokens, stays cached
  when its reference count drops to 0, and is evicted (least recently released first) only when
  no empty block is left. `free` releases a table from its last block to its first, so among
  blocks released together the tail of a sequence is evicted before its prefix.
- `fork` shares the parent's blocks (reference counts + 1); the first append into a shared,
  partly filled last block copies it (copy-on-write) and returns the (src, dst) copy to perform.
- Every failing call raises before changing anything (OutOfBlocks when blocks run out).

`write_kv` and `paged_attention` are the device side: one advanced-indexing store per step, and
one gather of every sequence's blocks through its table, masked past its context length.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any


class OutOfBlocks(Exception):
    """No free block is left for this request (raised before anything changes)."""


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int,
                 enable_prefix_caching: bool = False) -> None:
        if not isinstance(num_blocks, int) or num_blocks < 1:
            raise ValueError(f"num_blocks must be an int >= 1, got {num_blocks!r}")
        if not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be an int >= 1, got {block_size!r}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.caching = enable_prefix_caching
        self.ref = [0] * num_blocks
        self.empty = list(range(num_blocks))  # a heap: refcount 0, holding nothing cached
        self.evictable: OrderedDict[int, None] = OrderedDict()  # refcount 0, cached; LRU first
        self.hash_of: dict[int, int] = {}  # block -> its chained hash (registered blocks only)
        self.cached: dict[int, int] = {}  # chained hash -> block
        self.tables: dict[int, list[int]] = {}
        self.tokens: dict[int, list[int]] = {}

    # -- queries ------------------------------------------------------------------------------
    def num_free(self) -> int:
        """Blocks no sequence holds (empty ones plus cached ones that may be evicted)."""
        return len(self.empty) + len(self.evictable)

    def block_table(self, seq_id: int) -> list[int]:
        return list(self._table(seq_id))

    def can_allocate(self, token_ids: Sequence[int]) -> bool:
        need, hits = self._plan(list(token_ids))
        return need <= self.num_free() - sum(1 for b in hits if self.ref[b] == 0)

    # -- operations -----------------------------------------------------------------------------
    def allocate(self, seq_id: int, token_ids: Sequence[int]) -> int:
        """Give `seq_id` blocks for its prompt; returns how many leading tokens were cache hits."""
        if seq_id in self.tables:
            raise ValueError(f"sequence {seq_id} already has blocks")
        tokens = list(token_ids)
        need, hits = self._plan(tokens)
        if need > self.num_free() - sum(1 for b in hits if self.ref[b] == 0):
            raise OutOfBlocks(f"sequence {seq_id} needs {need} new blocks, "
                              f"{self.num_free()} are free")
        for b in hits:
            self.evictable.pop(b, None)
            self.ref[b] += 1
        table = hits + [self._new_block() for _ in range(need)]
        self.tables[seq_id] = table
        self.tokens[seq_id] = tokens
        parent: int | None = None
        for i in range(len(tokens) // self.block_size):
            parent = self._hash(parent, tokens, i)
            if i >= len(hits):
                self._register(table[i], parent)
        return len(hits) * self.block_size

    def append_slot(self, seq_id: int, token_id: int) -> tuple[int, int, tuple[int, int] | None]:
        """Room for one more token: (block, offset, copy), copy = (src, dst) or None."""
        table = self._table(seq_id)
        tokens = self.tokens[seq_id]
        n = len(tokens)
        offset = n % self.block_size
        cow: tuple[int, int] | None = None
        if offset == 0:
            block = self._new_block()
            table.append(block)
        else:
            last = table[-1]
            if self.ref[last] > 1:  # shared and partly filled: copy before writing
                block = self._new_block()
                self.ref[last] -= 1
                table[-1] = block
                cow = (last, block)
            else:
                block = last
        tokens.append(token_id)
        if self.caching and (n + 1) % self.block_size == 0:
            parent: int | None = None
            for i in range(len(tokens) // self.block_size):
                parent = self._hash(parent, tokens, i)
            self._register(block, parent)
        return block, offset, cow

    def fork(self, parent_id: int, child_id: int) -> None:
        table = self._table(parent_id)
        if child_id in self.tables:
            raise ValueError(f"sequence {child_id} already exists")
        for b in table:
            self.ref[b] += 1
        self.tables[child_id] = list(table)
        self.tokens[child_id] = list(self.tokens[parent_id])

    def free(self, seq_id: int) -> None:
        table = self._table(seq_id)
        del self.tables[seq_id], self.tokens[seq_id]
        for b in reversed(table):  # the tail first: it is evicted before the prefix
            self.ref[b] -= 1
            if self.ref[b] == 0:
                if b in self.hash_of:
                    self.evictable[b] = None
                else:
                    heapq.heappush(self.empty, b)

    # -- internals ------------------------------------------------------------------------------
    def _table(self, seq_id: int) -> list[int]:
        if seq_id not in self.tables:
            raise ValueError(f"unknown sequence {seq_id}")
        return self.tables[seq_id]

    def _hash(self, parent: int | None, tokens: list[int], i: int) -> int:
        bs = self.block_size
        return hash((parent, tuple(tokens[i * bs:(i + 1) * bs])))

    def _plan(self, tokens: list[int]) -> tuple[int, list[int]]:
        """(new blocks needed, cached blocks reused: the longest cached prefix of full blocks)."""
        hits: list[int] = []
        if self.caching:
            parent: int | None = None
            for i in range(len(tokens) // self.block_size):
                parent = self._hash(parent, tokens, i)
                if parent not in self.cached:
                    break
                hits.append(self.cached[parent])
        return -(-len(tokens) // self.block_size) - len(hits), hits

    def _register(self, block: int, h: int | None) -> None:
        if self.caching and h is not None and h not in self.cached:
            self.cached[h] = block
            self.hash_of[block] = h

    def _new_block(self) -> int:
        if self.empty:
            block = heapq.heappop(self.empty)
        elif self.evictable:
            block, _ = self.evictable.popitem(last=False)
            del self.cached[self.hash_of.pop(block)]
        else:
            raise OutOfBlocks("all blocks are in use")
        self.ref[block] = 1
        return block


# -- level 4: the device side ----------------------------------------------------------------------
def write_kv(k_cache: Any, v_cache: Any, blocks: Any, offsets: Any, k: Any, v: Any) -> None:
    """Store one token per sequence: k_cache[blocks[i], offsets[i]] = k[i] (same for v).

    k_cache, v_cache: [num_blocks, block_size, kv_heads, head_dim]; blocks, offsets: LongTensor
    [B]; k, v: [B, kv_heads, head_dim]."""
    k_cache[blocks, offsets] = k
    v_cache[blocks, offsets] = v


def paged_attention(q: Any, k_cache: Any, v_cache: Any, block_tables: Any, context_lens: Any,
                    scale: float) -> Any:
    """Decode attention of one query per sequence over its paged K/V.

    q: [B, heads, head_dim]; caches: [num_blocks, block_size, kv_heads, head_dim];
    block_tables: LongTensor [B, max_blocks] (entries past a sequence's blocks are padding);
    context_lens: LongTensor [B]. Returns [B, heads, head_dim]."""
    import torch

    B, H, D = q.shape
    _, bs, kvh, _ = k_cache.shape
    width = block_tables.shape[1] * bs
    keys = k_cache[block_tables].reshape(B, width, kvh, D)  # [B, T, kvh, D]
    values = v_cache[block_tables].reshape(B, width, kvh, D)
    group = H // kvh
    grouped = q.reshape(B, kvh, group, D)  # query head h reads KV head h // group
    scores = torch.einsum("bkgd,btkd->bkgt", grouped, keys) * scale
    valid = torch.arange(width, device=q.device)[None, :] < context_lens[:, None]
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    weights = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    return torch.einsum("bkgt,btkd->bkgd", weights, values).reshape(B, H, D)
