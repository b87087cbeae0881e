"""Broken: one cache row per slot for the whole run; preemption frees the newest request's slot
but leaves that row's mask as it was, so the request, recomputed from its prompt when it is
admitted again, lands in its old slot and attends to its own old KV as well as to what it
recomputes. Finished slots are cleared correctly: only a recompute meets a stale row."""

from typing import Any

import torch
from _engine_base import mutate

_ref = mutate("recompute_stale_row")


class Engine(_ref.Engine):  # type: ignore[name-defined,misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.slots: list[Any] = []  # a request per cache row, None when free
        self.order: dict[int, int] = {}  # request id -> when its slot was (re)filled
        self.filled = 0

    def step(self) -> bool:
        if self.closed:
            return False
        live = [s for s in self.slots if s is not None]
        if self.continuous:
            self._admit_slots(live)
        elif not live and self._due(self.clock()):
            while self.waiting and (None in self.slots or len(self.slots) < self.max_batch_size):
                self._fill(self.waiting.popleft())
        if not any(s is not None for s in self.slots):
            return False
        self._slot_forward()
        return True

    def _admit_slots(self, live: list[Any]) -> None:
        held = sum(s.cached + len(s.feed(self.chunk)) for s in live)
        while self.budget is not None and held > self.budget and len(live) > 1:
            newest = max(live, key=lambda s: self.order[s.rid])
            held -= newest.cached + len(newest.feed(self.chunk))
            self.slots[self.slots.index(newest)] = None  # the bug: its mask row still says 1
            newest.cached = 0
            self.waiting.appendleft(newest)
            live.remove(newest)
        if not live and not self._due(self.clock()):
            return
        while self.waiting and (None in self.slots or len(self.slots) < self.max_batch_size):
            need = len(self.waiting[0].feed(self.chunk))
            if self.budget is not None and held + need > self.budget:
                break
            held += need
            self._fill(self.waiting.popleft())

    def _fill(self, seq: Any) -> None:
        self.filled += 1
        self.order[seq.rid] = self.filled
        if None in self.slots:
            self.slots[self.slots.index(None)] = seq
        else:
            self.slots.append(seq)

    def _start(self, row: int, seq: Any) -> int:
        """The position of the row's first new token: the tokens its request has cached."""
        return int(seq.cached)

    def _slot_forward(self) -> None:
        kv: Any = self.cache.kv
        n = len(self.slots)
        if kv is not None and n > kv.rows:
            extra = n - kv.rows
            self.cache.kv = kv.add_rows(extra)
            mask: Any = self.cache.mask
            self.cache.mask = torch.cat([mask, mask.new_zeros((extra, mask.shape[1]))])
        feeds = [[] if s is None else s.feed(self.chunk) for s in self.slots]
        width = max(len(f) for f in feeds)
        ids, new_mask, pos = [], [], []
        for i, (s, f) in enumerate(zip(self.slots, feeds, strict=True)):
            gap = width - len(f)
            start = 0 if s is None else self._start(i, s)
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
            if s.cached < s.length:
                continue  # a chunk of a long prompt: no token yet
            s.out.append(int(tok))
            self.on_event(_ref.Token(s.rid, int(tok)))
            reason = s.finish_reason()
            if reason is not None:
                self.on_event(_ref.Finish(s.rid, reason))
                self.slots[i] = None
                self.cache.mask[i] = 0  # a finished slot is cleared: its columns are free
        self.running = [s for s in self.slots if s is not None]
