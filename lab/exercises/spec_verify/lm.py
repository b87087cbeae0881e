"""The small model interface the spec-verify exercise gives learners over a transformers model.

Speculative decoding needs exactly three things from a model: run it over a few *new* tokens on
top of what it has already seen (its KV cache), cut that cache back when drafted tokens are
rejected, and count passes so the speed-up can be explained. `CausalLM` offers just that, so a
learner's loop works the same on a tiny random model, the shipped pair, CPU or GPU.

It also keeps, on request, a trace of the context every pass ran on. The grader uses the trace to
say *which* cache went stale (a rejected token left in the target's cache, or a draft that never
saw the bonus token) instead of only reporting that the output differs. That evidence lives in a
`Ledger` the grader owns: `reset()` zeroes the learner-facing counters and trace (a fresh
generation) but only *adds* a reset to the ledger, so a loop that resets and recomputes the whole
sequence every block cannot erase the passes it ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lab.models.lean_llama import KVView, copy_into_buffer, lean_for
from lab.models.windows import full_cache

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Pass:
    """One forward pass: how many tokens were already cached, and the whole context after it."""

    cached: int
    context: tuple[int, ...]

    @property
    def new_tokens(self) -> tuple[int, ...]:
        return self.context[self.cached :]


class Ledger:
    """Every pass and reset of the models attached to it, in call order (shared by a pair).

    Entries are (model name, Pass) for a forward pass and (model name, None) for a reset.
    `CausalLM.reset()` never clears a ledger; only its owner (the grader) does.
    """

    def __init__(self) -> None:
        self.entries: list[tuple[str, Pass | None]] = []

    def clear(self) -> None:
        self.entries = []

    def passes(self, name: str) -> list[Pass]:
        return [ps for who, ps in self.entries if who == name and ps is not None]


def sliding_window(config: Any) -> int | None:
    """The attention window every layer of `config` uses, None for full attention. A model
    that mixes windowed and full layers cannot take one explicit tree mask for all of them:
    refused with the reason."""
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    window = getattr(text, "sliding_window", None)
    if not window:
        return None
    types = set(getattr(text, "layer_types", None) or ["sliding_attention"])
    if "sliding_attention" not in types:  # e.g. Qwen2 with use_sliding_window off
        return None
    if types != {"sliding_attention"}:
        raise ValueError(f"tree verification needs one attention mask for every layer, but "
                         f"this model mixes layer types {sorted(types)} (a sliding window of "
                         f"{window} on some layers only): not supported")
    return int(window)


def vocab_of(model: Any) -> int:
    """The ids `model` may take and propose: its config's vocabulary, cut to what its pair
    shares where `inputs.shipped` set `lab_vocab_size` (a checkpoint that pads its logits past
    its tokenizer or its partner: 1,024 logits over a 1,000-token tokenizer)."""
    return int(getattr(model, "lab_vocab_size", model.config.vocab_size))


class CausalLM:
    """A causal LM with a KV cache, batch size 1.

    `forward(tokens)` feeds `tokens` after everything already cached and returns one row of fp32
    logits per new token (row j scores the token that follows `tokens[j]`); `crop(n)` keeps only
    the first `n` cached tokens; `passes` counts forward passes, `tokens_processed` the tokens fed.
    """

    def __init__(self, model: Any, *, name: str = "model", record: bool = False,
                 ledger: Ledger | None = None) -> None:

        self.model = model
        self.name = name
        self.record = record
        first = next(model.parameters())
        self.device: torch.device = first.device
        self.vocab_size: int = vocab_of(model)  # logits are cut to it
        self.passes = 0
        self.tokens_processed = 0
        self.trace: list[Pass] = []
        self.ledger = ledger
        self._tokens: list[int] = []
        self._cache: Any = None  # transformers' DynamicCache (models LeanLlama does not cover)
        # a plain Llama (the shipped pair, the grader's tiny models) runs through LeanLlama: the
        # same computation without the generic forward's per-call overhead, its cache growing
        # in place and cropped for free (this object is the cache's sole holder)
        self._lean = lean_for(model)
        self._kv: KVView | None = None

    # --- the learner-facing interface -------------------------------------------------------
    @property
    def cache_len(self) -> int:
        """Number of tokens currently held in the KV cache."""
        return len(self._tokens)

    @property
    def context(self) -> tuple[int, ...]:
        """The token ids held in the KV cache, oldest first (read-only copy)."""
        return tuple(self._tokens)

    def forward(self, tokens: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """Run the model over `tokens` appended to the cached context; return fp32 logits [n, V].

        The cache grows by n tokens. The logits stay on the model's device.
        """
        import torch

        ids = [int(t) for t in (tokens.tolist() if isinstance(tokens, torch.Tensor) else tokens)]
        if not ids:
            raise ValueError(f"{self.name}.forward() needs at least one new token")
        bad = [t for t in ids if not 0 <= t < self.vocab_size]
        if bad:
            raise ValueError(
                f"{self.name}.forward(): token id {bad[0]} is outside the vocabulary "
                f"[0, {self.vocab_size})"
            )
        input_ids = torch.tensor([ids], dtype=torch.long, device=self.device)
        cached = len(self._tokens)
        if self._lean is not None and cached == 0:
            out_logits, self._kv = self._lean.prefill(input_ids)
        elif self._lean is not None:
            positions = torch.arange(cached, cached + len(ids), device=self.device)[None]
            out_logits, self._kv = self._lean.step(input_ids, positions, self._kv,
                                                   last_only=False)
        else:
            if self._cache is None:
                self._cache = full_cache(self.model.config)
            with torch.inference_mode():
                out = self.model(input_ids=input_ids, cache=self._cache, use_cache=True)
            self._cache, out_logits = out.cache, out.logits
        self._tokens.extend(ids)
        self.passes += 1
        self.tokens_processed += len(ids)
        self._log(Pass(cached=cached, context=tuple(self._tokens)))
        logits: torch.Tensor = out_logits[0, :, : self.vocab_size].float()
        return logits

    def forward_tree(self, tokens: Sequence[int], tree_mask: torch.Tensor) -> torch.Tensor:
        """Score a token tree in one pass: node i sees the cache plus the nodes tree_mask[i] marks.

        tree_mask: [N, N] bool, True where node i may attend to node j (itself and its
        ancestors). Node positions are cache_len + depth, depth = ancestors counted by the mask.
        All N nodes enter the cache; keep the accepted path with `keep`.
        """
        import torch

        ids = [int(t) for t in tokens]
        n = len(ids)
        mask = torch.as_tensor(tree_mask, dtype=torch.bool).cpu()
        if mask.shape != (n, n):
            raise ValueError(f"{self.name}.forward_tree(): tree_mask must be [{n}, {n}], got "
                             f"{tuple(mask.shape)}")
        base = len(self._tokens)
        full = torch.cat([torch.ones(n, base, dtype=torch.bool), mask], dim=1)
        depth = mask.long().sum(dim=1) - 1
        window = sliding_window(self.model.config)
        if window is not None:  # an explicit mask replaces the model's: keep its window in it
            q_pos = base + depth
            k_pos = torch.cat([torch.arange(base), q_pos])
            full &= (q_pos[:, None] - k_pos[None, :]) < window
        input_ids = torch.tensor([ids], device=self.device)
        positions = (base + depth)[None].to(self.device)
        if self._lean is not None:
            out_logits, self._kv = self._lean.step(input_ids, positions, self._kv,
                                                   full[None, None].to(self.device),
                                                   last_only=False)
        else:
            if self._cache is None:
                self._cache = full_cache(self.model.config)
            with torch.inference_mode():
                out = self.model(input_ids=input_ids, cache=self._cache,
                                 attention_mask=full[None, None].to(self.device),
                                 position_ids=positions, use_cache=True)
            self._cache, out_logits = out.cache, out.logits
        self._tokens.extend(ids)
        self.passes += 1
        self.tokens_processed += n
        self._log(Pass(cached=base, context=tuple(self._tokens)))
        logits: torch.Tensor = out_logits[0, :, : self.vocab_size].float()
        return logits

    def keep(self, positions: Sequence[int]) -> None:
        """Keep only these cache positions (ascending), e.g. the prefix plus an accepted path."""
        import torch

        pos = [int(p) for p in positions]
        if pos != sorted(set(pos)) or (pos and not 0 <= pos[0] <= pos[-1] < len(self._tokens)):
            raise ValueError(f"{self.name}.keep(): positions must be ascending, distinct and in "
                             f"[0, {len(self._tokens)})")
        if not pos:
            self.reset_cache_only()
            return
        idx = torch.tensor(pos, device=self.device)
        if self._kv is not None:
            with torch.inference_mode():
                self._kv = copy_into_buffer([(k.index_select(-2, idx), v.index_select(-2, idx))
                                             for k, v in self._kv.layers()], 0)
        else:
            for layer in self._cache.layers:
                layer.keys = layer.keys.index_select(-2, idx)
                layer.values = layer.values.index_select(-2, idx)
        self._tokens = [self._tokens[p] for p in pos]

    def reset_cache_only(self) -> None:
        self._cache = self._kv = None
        self._tokens = []

    def crop(self, length: int) -> None:
        """Keep only the first `length` cached tokens (drop rejected drafts from the cache)."""
        length = int(length)
        if not 0 <= length <= len(self._tokens):
            raise ValueError(
                f"{self.name}.crop({length}): the cache holds {len(self._tokens)} tokens; "
                f"length must be in [0, {len(self._tokens)}]"
            )
        drop = len(self._tokens) - length
        if drop == 0:
            return
        if length == 0:
            self._cache = self._kv = None
        elif self._kv is not None:
            self._kv = self._kv.truncate(length)
        else:
            self._cache.crop(-drop)  # transformers 5.x: a negative count of tokens to remove
        del self._tokens[length:]

    def reset(self) -> None:
        """Empty the cache and zero the counters (a fresh generation).

        The grader's ledger is not cleared: it records the reset.
        """
        self._cache = self._kv = None
        self._tokens = []
        self.passes = 0
        self.tokens_processed = 0
        self.trace = []
        if self.ledger is not None:
            self.ledger.entries.append((self.name, None))

    def _log(self, ps: Pass) -> None:
        if self.record:
            self.trace.append(ps)
        if self.ledger is not None:
            self.ledger.entries.append((self.name, ps))

    def __repr__(self) -> str:
        return (
            f"CausalLM({self.name}, vocab={self.vocab_size}, cache_len={self.cache_len}, "
            f"passes={self.passes})"
        )


def plain_greedy(
    lm: CausalLM, prompt_ids: Sequence[int], max_new_tokens: int, eos_token_id: int | None = None
) -> list[int]:
    """The target alone, one token per pass: the output speculative decoding must reproduce."""
    lm.reset()
    out: list[int] = []
    if max_new_tokens <= 0:
        return out
    logits = lm.forward(list(prompt_ids))[-1]
    while True:
        tok = int(logits.argmax())
        out.append(tok)
        if len(out) >= max_new_tokens or tok == eos_token_id:
            return out
        logits = lm.forward([tok])[-1]
