"""Broken: keeps one cache row per slot and hands a finished request's slot to the next one,
but leaves the previous occupant's columns unmasked, so the newcomer attends to stale KV."""

from typing import Any

import torch
from _engine_base import mutate

_ref = mutate("stale_kv_refill")


class Engine(_ref.Engine):  # type: ignore[name-defined,misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slots: list[Any] = []  # a request per cache row, None when free

    def step(self) -> bool:
        if self.closed:
            return False
        live = [s for s in self.slots if s is not None]
        if not live and not self._due(self.clock()):
            return False
        if self.continuous or not live:
            for i, s in enumerate(self.slots):
                if s is None and self.waiting:
                    self.slots[i] = self.waiting.popleft()
            while self.waiting and len(self.slots) < self.max_batch_size:
                self.slots.append(self.waiting.popleft())
        if not any(s is not None for s in self.slots):
            return False
        self._slot_forward()
        return True

    def _slot_forward(self) -> None:
        kv: Any = self.cache.kv
        n = len(self.slots)
        if kv is not None and n > kv.rows:
            extra = n - kv.rows
            self.cache.kv = kv.add_rows(extra)
            mask: Any = self.cache.mask
            self.cache.mask = torch.cat([mask, mask.new_zeros((extra, mask.shape[1]))])
        feeds = [[] if s is None else s.feed(None) for s in self.slots]
        width = max(len(f) for f in feeds)
        ids, new_mask, pos = [], [], []
        for s, f in zip(self.slots, feeds, strict=True):
            gap = width - len(f)
            start = 0 if s is None else s.cached
            ids.append([self.model.pad_id] * gap + f)
            new_mask.append([0] * gap + [1] * len(f))
            pos.append([0] * gap + list(range(start, start + len(f))))
        new = torch.tensor(new_mask, dtype=torch.long)
        self.cache.mask = new if self.cache.mask is None else torch.cat([self.cache.mask, new], 1)
        logits, self.cache.kv = self.model.forward(torch.tensor(ids), self.cache.mask,
                                                   torch.tensor(pos), self.cache.kv)
        tokens = logits.argmax(-1).tolist()
        for i, (s, f, tok) in enumerate(zip(self.slots, feeds, tokens, strict=True)):
            if s is None:
                continue
            s.cached += len(f)
            s.out.append(int(tok))
            self.on_event(_ref.Token(s.rid, int(tok)))
            reason = s.finish_reason()
            if reason is not None:
                self.on_event(_ref.Finish(s.rid, reason))
                self.slots[i] = None  # the bug: row i of the mask still says 1 for its columns
        self.running = [s for s in self.slots if s is not None]
