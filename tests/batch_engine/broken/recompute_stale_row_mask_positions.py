"""Broken: `recompute_stale_row`'s engine, with each row's positions counted from its mask (the
1s in its row, as `attention_mask.cumsum(-1) - 1` does): a request recomputed in its own stale
row continues from its old columns' count instead of restarting at 0, so no position looks
wrong; its tokens do (it attends to its old KV and to the recompute of the same tokens)."""

from typing import Any

from recompute_stale_row import Engine as StaleRowEngine


class Engine(StaleRowEngine):  # type: ignore[misc]
    def _start(self, row: int, seq: Any) -> int:
        mask = self.cache.mask
        return 0 if mask is None or row >= mask.shape[0] else int(mask[row].sum())
