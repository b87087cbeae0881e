"""The grader's stub model: same `forward` as the real one, but it logs every call with its
time, checks the inputs an engine builds, and charges virtual time for the work.

Its "KV cache" is a real `KVCache` whose single layer stores, per column, the token, the position
it was fed with, a running hash of the sequence so far, and the sequence's marker (its first
prompt token, which the grader makes unique per request). So select/add_rows/drop_left behave
exactly as with the real model, and the probe can tell, for every row of every call:
- which request it is (marker) and how many KV tokens it holds afterwards (for the budget);
- whether the new tokens are left-padded, masked and positioned per row;
- whether the cached columns a row attends to form one sequence (positions 0..n-1), which they
  do not when a refilled slot still attends to the previous occupant's KV.
The next token is a hash of the whole sequence (tokens and positions), so any mistake also
changes the output, exactly like a real model would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.exercises.batch_engine.runtime import KVCache

VOCAB = 512
FIRST_ID = 2  # ids 0 (pad) and 1 are never produced
POISON = 1  # a real (unmasked) token 1 in a call makes the probe raise: a poison request
MOD = 2_147_483_647
TOKEN, POS, HASH, MARK = range(4)
MAX_VIOLATIONS = 20


def next_state(h: int, token: int, position: int) -> int:
    return (h * 1_000_003 + (token + 1) * 7_919 + (position + 1) * 104_729 + 12_345) % MOD


def token_of(h: int) -> int:
    return FIRST_ID + h % (VOCAB - FIRST_ID)


def solo(prompt: list[int], max_tokens: int, stop_ids: tuple[int, ...] = (),
         stop_seqs: tuple[tuple[int, ...], ...] = ()) -> tuple[list[int], str]:
    """What the probe generates for one request alone (the expected output)."""
    if max_tokens == 0:
        return [], "length"
    h = 0
    for i, t in enumerate(prompt):
        h = next_state(h, t, i)
    out: list[int] = []
    while True:
        t = token_of(h)
        out.append(t)
        if t in stop_ids or any(s and tuple(out[-len(s):]) == tuple(s) for s in stop_seqs):
            return out, "stop"
        if len(out) >= max_tokens:
            return out, "length"
        h = next_state(h, t, len(prompt) + len(out) - 1)


@dataclass
class Call:
    """One forward: when it started, its shape, and per row (marker, new tokens, KV held after)."""

    time: float
    width: int
    rows: list[tuple[int, int, int]]
    step: int = -1

    @property
    def markers(self) -> list[int]:
        return [r[0] for r in self.rows]

    @property
    def held(self) -> int:
        return sum(r[2] for r in self.rows)


@dataclass
class ProbeModel:
    """Stub step model. `clock_advance(dt)` is called with the virtual cost of each call:
    step_cost_s + token_cost_s per real (unpadded) new token, like a padding-free kernel."""

    clock: Callable[[], float]
    clock_advance: Callable[[float], None] | None = None
    step_cost_s: float = 0.004
    token_cost_s: float = 0.0005
    vocab_size: int = VOCAB
    max_positions: int = 4096
    pad_id: int = 0
    calls: list[Call] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    step_index: int = -1
    raised: int = 0  # forwards that raised (poison)

    def _flag(self, message: str) -> None:
        if len(self.violations) < MAX_VIOLATIONS and message not in self.violations:
            self.violations.append(message)

    def forward(
        self, input_ids: Any, attention_mask: Any, position_ids: Any, kv: KVCache | None
    ) -> tuple[Any, KVCache]:
        import torch

        n = len(self.calls)
        ids = torch.as_tensor(input_ids).long().cpu()
        pos = torch.as_tensor(position_ids).long().cpu()
        if ids.dim() != 2 or pos.shape != ids.shape:
            raise ValueError(f"input_ids and position_ids must both be [B, T]; got "
                             f"{tuple(ids.shape)} and {tuple(pos.shape)}")
        b, t = ids.shape
        past = 0 if kv is None else kv.length
        if kv is not None and kv.rows != b:
            raise ValueError(f"the cache has {kv.rows} rows but input_ids has {b}: keep the "
                             "cache rows in step with the batch (select / add_rows)")
        if attention_mask is None:
            if b > 1:
                self._flag(f"call {n}: attention_mask is None for a batch of {b} rows — without "
                           "a mask every row attends to the padding and to cache columns that "
                           "are not its own")
            mask = torch.ones((b, past + t), dtype=torch.long)
        else:
            mask = torch.as_tensor(attention_mask).long().cpu()
            if tuple(mask.shape) != (b, past + t):
                raise ValueError(f"attention_mask must be [B, cache length + T] = "
                                 f"[{b}, {past + t}], got {tuple(mask.shape)}")
        cols = torch.zeros((b, 1, 0, 4), dtype=torch.long) if kv is None else kv.layers[0][0].cpu()
        poisoned = ((ids == POISON) & (mask[:, past:] == 1)).any(1).nonzero().flatten().tolist()
        if poisoned:
            self.raised += 1
            if self.clock_advance is not None:
                self.clock_advance(self.step_cost_s)
            raise RuntimeError(f"poisoned input in row {poisoned[0]} of this call "
                               "(the probe's stand-in for one request breaking the model)")
        self._check_cache(n, mask[:, :past], cols)
        new_cols = torch.zeros((b, 1, t, 4), dtype=torch.long)
        out_tokens: list[int] = []
        rows: list[tuple[int, int, int]] = []
        for r in range(b):
            m_new = mask[r, past:].tolist()
            if 1 in m_new and 0 in m_new[m_new.index(1):]:
                self._flag(f"call {n}, row {r}: padding to the right of a real token "
                           f"(mask {m_new}) — pad on the left so every row's newest token is "
                           "in the last column")
            valid_past = mask[r, :past].nonzero().flatten().tolist()
            n_past = len(valid_past)
            if valid_past:
                last = cols[r, 0, valid_past[-1]]
                h, marker = int(last[HASH]), int(last[MARK])
            else:
                h, marker = 0, -1
            expect = n_past
            got_pos: list[int] = []
            want_pos: list[int] = []
            for j in range(t):
                tok, p = int(ids[r, j]), int(pos[r, j])
                if m_new[j]:
                    if tok < FIRST_ID:
                        self._flag(f"call {n}, row {r}: attention_mask is 1 on a padding token "
                                   f"(id {tok}) — the mask must be 0 on padding, or the row "
                                   "attends to it as if it were text")
                    if marker < 0:
                        marker = tok
                    got_pos.append(p)
                    want_pos.append(expect)
                    expect += 1
                    h = next_state(h, tok, p)
                    new_cols[r, 0, j] = torch.tensor([tok, p, h, marker])
                else:
                    new_cols[r, 0, j] = torch.tensor([tok, p, 0, marker])
            if got_pos and got_pos[0] == 0 and n_past > 0:
                self._flag(f"call {n}, row {r}: a new sequence (positions from 0) attends to "
                           f"{n_past} cached columns of another request — stale KV: a refilled "
                           "slot must mask out its previous occupant's columns (or drop the "
                           "row and add a fresh one)")
            elif got_pos != want_pos:
                self._flag(f"call {n}, row {r}: position_ids {got_pos} for its new tokens, "
                           f"expected {want_pos} — positions count each row's own real tokens "
                           "(attention_mask.cumsum(-1) - 1), not columns of the padded batch")
            if m_new and not m_new[-1]:
                h = int(new_cols[r, 0, t - 1, TOKEN]) * 31 + 7  # the last column is padding
            out_tokens.append(token_of(h))
            rows.append((marker, sum(m_new), n_past + sum(m_new)))
        self.calls.append(Call(self.clock(), t, rows, self.step_index))
        if self.clock_advance is not None:
            self.clock_advance(self.step_cost_s + self.token_cost_s * int(mask[:, past:].sum()))
        logits = torch.zeros((b, self.vocab_size))
        logits[torch.arange(b), torch.tensor(out_tokens)] = 1.0
        cache = torch.cat([cols, new_cols], 2)
        return logits, KVCache(((cache, cache),))

    def _check_cache(self, n: int, mask: Any, cols: Any) -> None:
        """Every row must attend to exactly one sequence: positions 0, 1, ..., n-1 in order."""
        if mask.shape[1] == 0:
            return
        positions = cols[:, 0, :, POS]
        markers = cols[:, 0, :, MARK]
        expected = mask.cumsum(1) - 1
        bad = ((positions - expected) * mask).abs().sum(1) > 0
        for r in bad.nonzero().flatten().tolist()[:3]:
            seen = positions[r][mask[r].bool()].tolist()
            owners = sorted(set(markers[r][mask[r].bool()].tolist()))
            detail = (f"columns of {len(owners)} different requests" if len(owners) > 1
                      else "columns out of order")
            self._flag(f"call {n}, row {r}: the cached columns this row attends to are not one "
                       f"sequence (positions {_short(seen)}; {detail}) — stale KV: a refilled "
                       "slot must mask out its previous occupant's columns")


def _short(values: list[int], limit: int = 12) -> str:
    if len(values) <= limit:
        return str(values)
    return str(values[: limit // 2])[:-1] + ", …, " + str(values[-limit // 2:])[1:]
