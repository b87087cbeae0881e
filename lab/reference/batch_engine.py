"""Reference batch engine: size-or-wait batching, continuous batching, KV-budget preemption.

Shaped like nano-vllm: `step()` is three lines, schedule → run → postprocess.
- `_Seq`: one request's state: its output so far and how many of its tokens the cache holds.
- `BatchCache`: the KV cache and its attention mask, one row per running sequence. A forward
  adds empty rows for newcomers and appends the new columns; `keep(rows)` is the only way rows
  leave, and the only place where columns no row attends to any more are trimmed.
- `schedule() -> Batch`: who runs this step, FIFO. Static: size or wait, then run to completion.
  Continuous: re-formed every step under the KV budget, preempting the newest when the running
  batch cannot grow. The batch is every running sequence's new tokens, left-padded, with its mask
  and per-row positions.
- `run(batch)`: one forward; greedy tokens. `postprocess(batch, tokens)`: stream, finish, drop.

In continuous mode prompts go in PREFILL_CHUNK tokens per step (chunked prefill), so the decode
rows sharing a call are padded to at most that width: on CPU this is what lets continuous batching
beat static batching on p95 latency near saturation, not only at moderate load.

The wait clock is per request, from `submit` (Triton's rule): a request never waits longer than
max_wait for a batch to start, however long it queued.

Robustness: `cancel` frees a queued or running request at once; when a batched forward raises,
each row is run alone to find the request(s) at fault, which finish with "error", and the step
runs again without them (unlike Ray Serve, where one bad request fails its whole batch).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.exercises.batch_engine.runtime import Finish, KVCache, Request, Token

EventSink = Callable[[Token | Finish], None]
PREFILL_CHUNK = 8


@dataclass
class _Seq:
    """One request: its output so far and how many of its tokens the KV cache holds."""

    rid: int
    req: Request
    arrival: float
    out: list[int] = field(default_factory=list)
    cached: int = 0  # tokens of this sequence held in the KV cache

    @property
    def length(self) -> int:
        """Tokens in the sequence so far: prompt plus output."""
        return len(self.req.prompt) + len(self.out)

    def feed(self, chunk: int | None) -> list[int]:
        """The tokens the cache does not hold yet, at most `chunk` of them: while decoding, the
        last token; a newcomer its prompt; a preempted sequence (cached = 0) prompt + output."""
        prompt_left = self.req.prompt[self.cached:]
        out_left = self.out[max(0, self.cached - len(self.req.prompt)):]
        todo = [*prompt_left, *out_left]
        return todo if chunk is None else todo[:chunk]

    def finish_reason(self) -> str | None:
        """Stop (a stop token or stop sequence, included) wins over length."""
        if self.out[-1] in self.req.stop_token_ids:
            return "stop"
        for stop in self.req.stop_sequences:
            if stop and tuple(self.out[-len(stop):]) == stop:
                return "stop"
        return "length" if len(self.out) >= self.req.max_tokens else None


@dataclass
class Batch:
    """One forward's input: each running sequence's new tokens, left-padded to one width."""

    seqs: list[_Seq]
    feeds: list[list[int]]
    ids: Any  # LongTensor [rows, width]
    mask: Any  # LongTensor [rows, width]: 1 = a real new token, 0 = padding
    positions: Any  # LongTensor [rows, width]: each token's position in its own sequence

    @classmethod
    def of(cls, seqs: list[_Seq], chunk: int | None, pad_id: int) -> Batch:
        import torch

        feeds = [s.feed(chunk) for s in seqs]
        width = max(len(f) for f in feeds)
        ids, mask, positions = [], [], []
        for seq, feed in zip(seqs, feeds, strict=True):
            gap = width - len(feed)
            ids.append([pad_id] * gap + feed)
            mask.append([0] * gap + [1] * len(feed))
            positions.append([0] * gap + list(range(seq.cached, seq.cached + len(feed))))
        long = torch.long
        return cls(seqs, feeds, torch.tensor(ids, dtype=long), torch.tensor(mask, dtype=long),
                   torch.tensor(positions, dtype=long))


class BatchCache:
    """The KV cache and its attention mask, kept row for row with `Engine.running`."""

    def __init__(self) -> None:
        self.kv: KVCache | None = None
        self.mask: Any = None  # LongTensor [rows, kv.length]

    @property
    def rows(self) -> int:
        return 0 if self.kv is None else self.kv.rows

    def inputs(self, batch: Batch) -> tuple[KVCache | None, Any]:
        """The cache and full attention mask for a forward over `batch`: the rows past the cache
        (newcomers) start empty, every row gains the batch's new columns. Changes nothing."""
        import torch

        if self.kv is None:
            return None, batch.mask
        new_rows = len(batch.seqs) - self.kv.rows
        past = torch.cat([self.mask, self.mask.new_zeros((new_rows, self.mask.shape[1]))])
        return self.kv.add_rows(new_rows), torch.cat([past, batch.mask], 1)

    def keep(self, rows: list[int]) -> None:
        """Keep only `rows`, in this order, and drop the leading columns no row attends to."""
        if self.kv is None:
            return
        used = self.mask[rows].any(0).nonzero().flatten().tolist() if rows else []
        if not used:  # no row left, or none attends to anything
            self.kv, self.mask = None, None
            return
        self.kv = self.kv.select(rows).drop_left(used[0])
        self.mask = self.mask[rows, used[0]:]


class Engine:
    """Batching engine over a step model (see lab/exercises/batch_engine/runtime.py).

    continuous=False: a batch forms when max_batch_size requests are queued or the oldest has
    waited max_wait_s, and runs to completion before the next one forms (rows that finish leave).
    continuous=True: the batch is re-formed every step; while it runs, queued requests join at the
    next step; an idle engine still waits by the size-or-wait rule. kv_budget_tokens (continuous
    only) caps the tokens held in the cache across running sequences.
    """

    def __init__(
        self,
        model: Any,
        *,
        max_batch_size: int,
        max_wait_s: float,
        clock: Callable[[], float],
        on_event: EventSink,
        continuous: bool = False,
        kv_budget_tokens: int | None = None,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if max_wait_s < 0:
            raise ValueError(f"max_wait_s must be >= 0, got {max_wait_s}")
        if kv_budget_tokens is not None and kv_budget_tokens < 1:
            raise ValueError(f"kv_budget_tokens must be >= 1, got {kv_budget_tokens}")
        self.model = model
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.clock = clock
        self.on_event = on_event
        self.continuous = continuous
        self.budget = kv_budget_tokens if continuous else None
        self.chunk = PREFILL_CHUNK if continuous else None
        self.waiting: deque[_Seq] = deque()
        self.running: list[_Seq] = []  # in admission order = the cache's row order
        self.cache = BatchCache()
        self.next_id = 0
        self.closed = False

    # -- API ----------------------------------------------------------------------------------
    def submit(self, request: Request) -> int:
        """Queue a request; returns its id. Bad requests raise ValueError and change nothing."""
        if self.closed:
            raise RuntimeError("engine is shut down")
        self._validate(request)
        rid = self.next_id
        self.next_id += 1
        if request.max_tokens == 0:
            self.on_event(Finish(rid, "length"))
        else:
            self.waiting.append(_Seq(rid, request, self.clock()))
        return rid

    def step(self) -> bool:
        """One unit of work: schedule → run → postprocess. True if the model ran."""
        batch = None if self.closed else self.schedule()
        if batch is None:
            return False
        tokens = self.run(batch)
        while tokens is None:  # a request broke the model and failed alone: rerun the others
            batch = self._batch()
            if batch is None:
                return True
            tokens = self.run(batch)
        self.postprocess(batch, tokens)
        return True

    def cancel(self, request_id: int) -> bool:
        """Abort a queued or running request (one Finish("abort"), now); False if not live."""
        for seq in self.waiting:
            if seq.rid == request_id:
                self.waiting.remove(seq)
                self.on_event(Finish(request_id, "abort"))
                return True
        for i, seq in enumerate(self.running):
            if seq.rid == request_id:
                self._drop([i])
                self.on_event(Finish(request_id, "abort"))
                return True
        return False

    def shutdown(self) -> None:
        """Abort everything still queued or running: one Finish("abort") each."""
        if self.closed:
            return
        self.closed = True
        for seq in [*self.running, *self.waiting]:
            self.on_event(Finish(seq.rid, "abort"))
        self.running, self.waiting, self.cache = [], deque(), BatchCache()

    # -- scheduler ----------------------------------------------------------------------------
    def schedule(self) -> Batch | None:
        """Decide who runs this step; None when nobody does (yet)."""
        if self.continuous:
            self._admit_continuous(self.clock())
        elif not self.running:
            self._admit_static(self.clock())
        return self._batch()

    def _batch(self) -> Batch | None:
        return Batch.of(self.running, self.chunk, self.model.pad_id) if self.running else None

    def _validate(self, req: Request) -> None:
        if len(req.prompt) == 0:
            raise ValueError("empty prompt: a request needs at least one prompt token")
        if req.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {req.max_tokens}")
        vocab = self.model.vocab_size
        bad = [t for t in req.prompt if not 0 <= t < vocab]
        if bad:
            raise ValueError(f"prompt token {bad[0]} is outside the vocabulary [0, {vocab})")
        total = len(req.prompt) + req.max_tokens
        if total > self.model.max_positions:
            raise ValueError(f"prompt + max_tokens = {total} exceeds the model's "
                             f"{self.model.max_positions} positions")
        # the last token is streamed, never fed back: a request holds at most total - 1
        if self.budget is not None and req.max_tokens > 0 and total - 1 > self.budget:
            raise ValueError(f"this request alone needs {total - 1} KV tokens, "
                             f"over the budget of {self.budget}")

    def _due(self, now: float) -> bool:
        """Size or wait: a full batch is queued, or the oldest has waited max_wait."""
        return bool(self.waiting) and (len(self.waiting) >= self.max_batch_size
                                       or now - self.waiting[0].arrival >= self.max_wait_s)

    def _admit_static(self, now: float) -> None:
        if self._due(now):
            n = min(self.max_batch_size, len(self.waiting))
            self.running = [self.waiting.popleft() for _ in range(n)]

    def _admit_continuous(self, now: float) -> None:
        """Make room (preempt the newest while the running batch outgrows the budget), then admit
        from the front of the queue while a row is free and the head fits."""
        held = sum(s.cached + len(s.feed(self.chunk)) for s in self.running)  # after this step
        while self.budget is not None and held > self.budget and len(self.running) > 1:
            held -= self._preempt_newest()
        if not self.running and not self._due(now):
            return
        while self.waiting and len(self.running) < self.max_batch_size:
            need = len(self.waiting[0].feed(self.chunk))
            if self.budget is not None and held + need > self.budget:
                break  # FIFO: nobody overtakes the head of the queue
            self.running.append(self.waiting.popleft())
            held += need

    def _preempt_newest(self) -> int:
        """Free the newest running sequence's KV and requeue it first, to be recomputed; returns
        the tokens it would have held after this step."""
        seq = self.running[-1]
        freed = seq.cached + len(seq.feed(self.chunk))
        self._drop([len(self.running) - 1])
        seq.cached = 0
        self.waiting.appendleft(seq)
        return freed

    def _drop(self, rows: list[int]) -> None:
        """Remove these rows from the running batch and from the cache."""
        self.cache.keep([i for i in range(self.cache.rows) if i not in rows])
        self.running = [s for i, s in enumerate(self.running) if i not in rows]

    # -- model runner -------------------------------------------------------------------------
    def run(self, batch: Batch) -> list[int] | None:
        """One forward over the batch: the greedy next token of every row. If the forward raises,
        the rows at fault (run alone, they raise too) finish with "error" and leave the running
        batch and the cache, which are otherwise as before the call; returns None."""
        past, mask = self.cache.inputs(batch)
        try:
            logits, kv = self.model.forward(batch.ids, mask, batch.positions, past)
        except Exception as exc:
            bad = self._culprits(batch, past, mask)
            if not bad:
                raise exc  # no single request causes it: a real engine failure
            for i in bad:
                self.on_event(Finish(batch.seqs[i].rid, "error"))
            self._drop(bad)
            return None
        self.cache.kv, self.cache.mask = kv, mask
        return [int(t) for t in logits.argmax(-1).tolist()]

    def _culprits(self, batch: Batch, past: KVCache | None, mask: Any) -> list[int]:
        """The rows whose forward alone raises."""
        bad = []
        for i in range(len(batch.seqs)):
            try:
                self.model.forward(batch.ids[i:i + 1], mask[i:i + 1], batch.positions[i:i + 1],
                                   None if past is None else past.select([i]))
            except Exception:
                bad.append(i)
        return bad

    def postprocess(self, batch: Batch, tokens: list[int]) -> None:
        """Stream each row's token (once its prompt is all in), finish whoever is done, and drop
        the finished rows."""
        done = []
        for i, (seq, feed, token) in enumerate(zip(batch.seqs, batch.feeds, tokens, strict=True)):
            seq.cached += len(feed)
            if seq.cached < seq.length:
                continue  # a chunk of a long prompt: no token yet
            seq.out.append(token)
            self.on_event(Token(seq.rid, token))
            reason = seq.finish_reason()
            if reason is not None:
                self.on_event(Finish(seq.rid, reason))
                done.append(i)
        if done:
            self._drop(done)
