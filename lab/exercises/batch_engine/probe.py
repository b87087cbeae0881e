"""The grader's stub model: same `forward` as the real one, but it records every call with its
time and charges virtual time for the work. It judges nothing: the grader (parent side,
`grading/probe_checks.py`) reads the raw record.

Its "KV cache" is a real `KVCache` whose single layer stores, per column, the token, the position
it was fed with, a running hash of the sequence so far, and the sequence's marker (its first
prompt token, which the grader makes unique per request). So select/add_rows/drop_left behave
exactly as with the real model, and each recorded call (its input ids, positions, attention mask
and the positions and markers of the cache columns it was handed) shows, for every row, which
request it is, what it holds, and whether its inputs are well formed.
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
MAX_POSITIONS = 4096
TOKEN, POS, HASH, MARK = range(4)


def next_state(h: int, token: int, position: int) -> int:
    return (h * 1_000_003 + (token + 1) * 7_919 + (position + 1) * 104_729 + 12_345) % MOD


def token_of(h: int, zero_id: int = -1) -> int:
    """The token after state h; `zero_id` is emitted as 0 instead (id 0 as a real token)."""
    token = FIRST_ID + h % (VOCAB - FIRST_ID)
    return 0 if token == zero_id else token


def solo(prompt: list[int], max_tokens: int, stop_ids: tuple[int, ...] = (),
         stop_seqs: tuple[tuple[int, ...], ...] = (), zero_id: int = -1,
         ) -> tuple[list[int], str]:
    """What the probe generates for one request alone (the expected output)."""
    if max_tokens == 0:
        return [], "length"
    h = 0
    for i, t in enumerate(prompt):
        h = next_state(h, t, i)
    out: list[int] = []
    while True:
        t = token_of(h, zero_id)
        out.append(t)
        if t in stop_ids or any(s and tuple(out[-len(s):]) == tuple(s) for s in stop_seqs):
            return out, "stop"
        if len(out) >= max_tokens:
            return out, "length"
        h = next_state(h, t, len(prompt) + len(out) - 1)


@dataclass
class ProbeModel:
    """Stub step model. `clock_advance(dt)` is called with the virtual cost of each call:
    step_cost_s + token_cost_s per real (unpadded) new token, like a padding-free kernel.

    `calls` holds one plain dict per forward that returned: time, step, and int32 tensors
    ids / positions [B, T], mask [B, L + T] (all ones when the engine passed None, with
    mask_given False), cache_pos / cache_mark / cache_tok [B, L] (the cache columns the call was
    handed: each column's position, sequence marker and token)."""

    clock: Callable[[], float]
    clock_advance: Callable[[float], None] | None = None
    step_cost_s: float = 0.004
    token_cost_s: float = 0.0005
    vocab_size: int = VOCAB
    max_positions: int = MAX_POSITIONS
    zero_id: int = -1  # a token the probe emits as 0 (the pad id) instead: EOS-id-0 cases
    pad_id: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)
    step_index: int = -1
    raised: int = 0  # forwards that raised (poison)

    def forward(
        self, input_ids: Any, attention_mask: Any, position_ids: Any, kv: KVCache | None
    ) -> tuple[Any, KVCache]:
        import torch

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
        id_rows, pos_rows, mask_rows = ids.tolist(), pos.tolist(), mask.tolist()
        hashes, marks = cols[:, 0, :, HASH].tolist(), cols[:, 0, :, MARK].tolist()
        new_cols: list[list[list[int]]] = []
        out_tokens: list[int] = []
        for r in range(b):
            attended = [j for j in range(past) if mask_rows[r][j]]
            h, marker = (hashes[r][attended[-1]], marks[r][attended[-1]]) if attended else (0, -1)
            row = []
            for tok, p, m in zip(id_rows[r], pos_rows[r], mask_rows[r][past:], strict=True):
                if m:
                    marker = tok if marker < 0 else marker
                    h = next_state(h, tok, p)
                    row.append([tok, p, h, marker])
                else:
                    row.append([tok, p, 0, marker])
            if t and not mask_rows[r][-1]:
                h = id_rows[r][-1] * 31 + 7  # the last column is padding
            out_tokens.append(token_of(h, self.zero_id))
            new_cols.append(row)
        i32 = torch.int32
        self.calls.append({
            "t": self.clock(), "step": self.step_index, "mask_given": attention_mask is not None,
            "ids": ids.to(i32), "positions": pos.to(i32), "mask": mask.to(i32),
            "cache_pos": cols[:, 0, :, POS].to(i32), "cache_mark": cols[:, 0, :, MARK].to(i32),
            "cache_tok": cols[:, 0, :, TOKEN].to(i32),
        })
        if self.clock_advance is not None:
            self.clock_advance(self.step_cost_s + self.token_cost_s * int(mask[:, past:].sum()))
        logits = torch.zeros((b, self.vocab_size))
        logits[torch.arange(b), torch.tensor(out_tokens)] = 1.0
        fresh = torch.tensor(new_cols, dtype=torch.long).reshape(b, 1, t, 4)
        return logits, KVCache(((torch.cat([cols, fresh], 2),) * 2,))
