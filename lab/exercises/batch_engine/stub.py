"""batch-engine: a batching inference engine (see `dojo lab show batch-engine`).

Edit the bodies below, then run `dojo lab grade batch-engine --level 1` (or `dojo lab watch`).
The model, the KV cache type and the request/event types come from the lab; read their
docstrings in lab/exercises/batch_engine/runtime.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lab.exercises.batch_engine.runtime import Finish, KVCache, Request, Token

__all__ = ["Engine", "Finish", "KVCache", "Request", "Token"]


class Engine:
    """Batches requests onto one model.

    model: has `forward(input_ids, attention_mask, position_ids, kv) -> (logits [B, V], kv)`,
        `vocab_size`, `max_positions` and `pad_id` (see runtime.py). Greedy decoding: the next
        token of a row is `logits[row].argmax()`.
    max_batch_size: never more rows than this in one forward.
    max_wait_s: an idle engine starts a batch when max_batch_size requests are queued, or when
        the oldest queued request has waited max_wait_s since its `submit` (whichever is first).
    clock: returns the current time in seconds; use it for every time decision (never
        time.time() or sleep: the grader drives a virtual clock).
    on_event: call it with `Token(request_id, token)` as each token is produced, and with exactly
        one `Finish(request_id, reason)` per request, reason "stop", "length", "abort"
        (shutdown or cancel) or "error" (level 4: the request broke the model).
    continuous: False (level 1) — a batch runs to completion before the next one forms;
        True (level 2) — the batch is re-formed at every step.
    kv_budget_tokens: (level 3, continuous only) the most KV tokens the running requests may
        hold in the cache at once; None means unlimited.
    """

    def __init__(
        self,
        model: Any,
        *,
        max_batch_size: int,
        max_wait_s: float,
        clock: Callable[[], float],
        on_event: Callable[[Token | Finish], None],
        continuous: bool = False,
        kv_budget_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self.clock = clock
        self.on_event = on_event
        self.continuous = continuous
        self.kv_budget_tokens = kv_budget_tokens

    def submit(self, request: Request) -> int:
        """Queue `request` and return its id (ids are ints, unique per engine).

        Raise ValueError (and change nothing) for an empty prompt, max_tokens < 0, a token id
        outside [0, vocab_size), prompt + max_tokens > max_positions, or (level 3) a request
        that alone needs more than kv_budget_tokens. max_tokens == 0 finishes at once with no
        tokens and reason "length".
        """
        raise NotImplementedError("submit")

    def step(self) -> bool:
        """Do one unit of work at time clock(): decide who runs, then make at most ONE
        model.forward over every running request (newcomers prefill inside it, the others
        decode one token), stream the new tokens and finish whoever is done.

        Return True if the model ran, False if there was nothing to run yet.

        (Level 4) If model.forward raises, one request's input is at fault: find it (e.g. run
        each row alone), finish it with reason "error", and run the others — extra model calls
        are allowed in a step where a forward raised.
        """
        raise NotImplementedError("step")

    def cancel(self, request_id: int) -> bool:
        """(Level 4) Abort a queued or running request: send Finish(request_id, "abort") from
        here, free its slot at once, and return True. Return False, sending nothing, for a
        request that already finished or an id you never returned."""
        raise NotImplementedError("cancel")

    def shutdown(self) -> None:
        """Stop: every queued or running request gets Finish(request_id, "abort"); requests
        that already finished get nothing more."""
        raise NotImplementedError("shutdown")
