"""paged-kv: a paged KV cache (see `dojo lab show paged-kv`).

Edit the bodies below, then run `dojo lab grade paged-kv --level 1` (or `dojo lab watch paged-kv`).
Levels 1-3 are pure Python; level 4 adds the two torch functions at the bottom.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class OutOfBlocks(Exception):
    """Raised when a call needs a free block and none is left (before anything changes)."""


class BlockManager:
    """Hands out fixed-size KV blocks to sequences and keeps their block tables.

    num_blocks: blocks in the pool, ids 0 .. num_blocks - 1.
    block_size: token slots per block.
    enable_prefix_caching: (level 3) reuse cached full blocks across sequences.

    Every method that fails raises before changing anything: OutOfBlocks when it needs a block and
    none is free, ValueError for an unknown or already-live sequence id.
    """

    def __init__(self, num_blocks: int, block_size: int,
                 enable_prefix_caching: bool = False) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching

    def num_free(self) -> int:
        """Blocks no live sequence holds (with prefix caching: cached ones included)."""
        raise NotImplementedError("num_free")

    def can_allocate(self, token_ids: Sequence[int]) -> bool:
        """Whether allocate(...) of this prompt would succeed right now."""
        raise NotImplementedError("can_allocate")

    def allocate(self, seq_id: int, token_ids: Sequence[int]) -> int:
        """Give a new sequence blocks for its prompt (ceil(len / block_size) of them).

        Returns how many leading tokens were prefix-cache hits (a multiple of block_size;
        always 0 without prefix caching)."""
        raise NotImplementedError("allocate")

    def append_slot(self, seq_id: int, token_id: int) -> tuple[int, int, tuple[int, int] | None]:
        """Make room for one more token of `seq_id`; returns (block, offset, copy).

        A new block only when the last one is full. copy (level 2) is None, or (src, dst) when
        the last block was shared and partly filled: the caller copies src's K/V into dst."""
        raise NotImplementedError("append_slot")

    def fork(self, parent_id: int, child_id: int) -> None:
        """(Level 2) child_id shares every block of parent_id (reference counts + 1)."""
        raise NotImplementedError("fork")

    def free(self, seq_id: int) -> None:
        """Release a sequence's blocks (a block is free once no sequence holds it)."""
        raise NotImplementedError("free")

    def block_table(self, seq_id: int) -> list[int]:
        """The sequence's block ids in token order."""
        raise NotImplementedError("block_table")


# -- level 4 ----------------------------------------------------------------------------------
def write_kv(k_cache: Any, v_cache: Any, blocks: Any, offsets: Any, k: Any, v: Any) -> None:
    """Store one new token per sequence, in place.

    k_cache, v_cache: [num_blocks, block_size, kv_heads, head_dim]
    blocks, offsets:  LongTensor [B] — sequence i's token goes to (blocks[i], offsets[i])
    k, v:             [B, kv_heads, head_dim]
    """
    raise NotImplementedError("write_kv")


def paged_attention(q: Any, k_cache: Any, v_cache: Any, block_tables: Any, context_lens: Any,
                    scale: float) -> Any:
    """Decode attention: one query per sequence over its own cached tokens, read through its
    block table. Vectorised torch (no Python loop over tokens or blocks).

    q:            [B, heads, head_dim]   (heads is a multiple of kv_heads: GQA)
    k_cache, v_cache: [num_blocks, block_size, kv_heads, head_dim]
    block_tables: LongTensor [B, max_blocks]; entries past a sequence's blocks are padding
    context_lens: LongTensor [B]; sequence b attends to its tokens 0 .. context_lens[b] - 1
    scale:        multiply q·k by this (1 / sqrt(head_dim))
    returns       [B, heads, head_dim]
    """
    raise NotImplementedError("paged_attention")
