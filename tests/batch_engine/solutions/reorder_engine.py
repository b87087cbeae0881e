"""A correct engine that orders rows its own way: a static batch, and the newcomers admitted in
one continuous step, are sorted longest prompt first (ties: the later arrival first), and the
newest request to preempt is found by arrival, not by row. FIFO is about which step admits a
request, not about the order of the rows inside one call."""

import sys
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1] / "broken"))
from _engine_base import mutate

_ref = mutate("reorder_engine")


def _rows_first(seqs: list[Any]) -> list[Any]:
    return sorted(seqs, key=lambda s: (-len(s.req.prompt), -s.rid))


class Engine(_ref.Engine):  # type: ignore[name-defined,misc]
    def _admit_static(self, now: float) -> None:
        if self._due(now):
            n = min(self.max_batch_size, len(self.waiting))
            self.running = _rows_first([self.waiting.popleft() for _ in range(n)])

    def _admit_continuous(self, now: float) -> None:
        held = sum(s.cached + len(s.feed(self.chunk)) for s in self.running)
        while self.budget is not None and held > self.budget and len(self.running) > 1:
            held -= self._preempt_newest()
        if not self.running and not self._due(now):
            return
        fresh: list[Any] = []
        while self.waiting and len(self.running) + len(fresh) < self.max_batch_size:
            need = len(self.waiting[0].feed(self.chunk))
            if self.budget is not None and held + need > self.budget:
                break
            fresh.append(self.waiting.popleft())
            held += need
        self.running.extend(_rows_first(fresh))

    def _preempt_newest(self) -> int:
        i = max(range(len(self.running)), key=lambda j: self.running[j].rid)
        seq = self.running[i]
        freed: int = seq.cached + len(seq.feed(self.chunk))
        self._drop([i])
        seq.cached = 0
        self.waiting.appendleft(seq)
        return freed
