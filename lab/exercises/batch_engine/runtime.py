"""What the lab hands a batch engine: a KV cache with row/column bookkeeping and a model step.

Both the real model (`HFStepModel`, the shipped pycode target) and the grader's logging stub
implement the same `forward`, so an engine cannot tell them apart:

    logits, kv = model.forward(input_ids, attention_mask, position_ids, kv)

    input_ids      LongTensor [B, T]       new tokens of each row, left-padded
    attention_mask LongTensor [B, L + T]   1 = a real token, 0 = padding; L = kv.length (0 if None)
    position_ids   LongTensor [B, T]       each token's position in its own sequence
    kv             KVCache | None          the cache from the previous call (rows line up with B)
    -> logits      FloatTensor [B, V]      next-token logits at the last column of each row
    -> kv          KVCache with L + T columns

torch is imported lazily so that importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lab.models.lean_llama import KVView, lean_for
from lab.models.loading import MODELS_DIR
from lab.models.windows import full_cache, has_window, window_masks


@dataclass(frozen=True)
class KVCache:
    """Per-layer (key, value) tensors shaped [rows, kv_heads, length, head_dim].

    A row is one sequence in the batch; a column is one cached position (real or padding, the
    attention mask says which). Operations return new caches; nothing is modified in place.
    `view` is the lean model's growable buffer behind `layers` (None for a cache built by hand
    or by transformers); the model appends to it in place only while no newer cache was cut
    from it, so `layers` never change under their holder.
    """

    layers: tuple[tuple[Any, Any], ...]
    view: KVView | None = field(default=None, compare=False, repr=False)

    @property
    def rows(self) -> int:
        return int(self.layers[0][0].shape[0])

    @property
    def length(self) -> int:
        return int(self.layers[0][0].shape[2])

    def select(self, rows: Sequence[int]) -> KVCache:
        """Keep only `rows`, in that order (drop finished or preempted sequences)."""
        import torch

        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.layers[0][0].device)
        return KVCache(tuple((k.index_select(0, index), v.index_select(0, index))
                             for k, v in self.layers))

    def add_rows(self, n: int) -> KVCache:
        """Append `n` empty rows (zeros in every column): mask all their columns out."""
        import torch

        if n <= 0:
            return self
        out = []
        for k, v in self.layers:
            shape = (n, *k.shape[1:])
            out.append((torch.cat([k, k.new_zeros(shape)], 0),
                        torch.cat([v, v.new_zeros(shape)], 0)))
        return KVCache(tuple(out))

    def drop_left(self, n: int) -> KVCache:
        """Drop the `n` oldest columns (drop the same columns of the attention mask)."""
        if n <= 0:
            return self
        if self.view is not None:
            view = self.view.cut(min(n, self.length), self.length)
            return KVCache(view.layers(), view)
        return KVCache(tuple((k[:, :, n:], v[:, :, n:]) for k, v in self.layers))


class HFStepModel:
    """A Hugging Face causal LM (or the shipped target's torch-only Llama, `plain_llama`) behind
    the `forward` above (fp32 on CPU: exact, batch-invariant argmax in practice). Every
    family's logits equal its own no-cache forward of each row alone
    (tests/models/test_families.py); a sliding-window model keeps full-length cache layers and
    gets its window in an explicit mask (`lab.models.windows`)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        config = model.config
        self.vocab_size: int = int(config.vocab_size)
        self.max_positions: int = int(config.max_position_embeddings)
        self.pad_id: int = int(config.pad_token_id if config.pad_token_id is not None else 0)
        self.device: Any = next(model.parameters()).device
        self.calls = 0
        # a plain Llama runs through `LeanLlama` (same ops, without the generic forward's per-call
        # overhead, and a cache that grows in place instead of being copied whole every step);
        # anything else through transformers
        self.lean = lean_for(model)

    def forward(
        self, input_ids: Any, attention_mask: Any, position_ids: Any, kv: KVCache | None
    ) -> tuple[Any, KVCache]:
        import torch

        self.calls += 1
        ids = input_ids.to(self.device)
        mask = None if attention_mask is None else attention_mask.to(self.device)
        if self.lean is not None:
            past: KVView | tuple[tuple[Any, Any], ...] | None = None
            if kv is not None:
                past = kv.view if _backs(kv.view, kv.layers) else kv.layers
            allowed = _allowed(ids, mask, 0 if kv is None else kv.length)
            if ids.device.type == "cpu" and bool(allowed.all()):
                allowed = None  # a decode step with no padding: attention unmasked (the same
                #                 numbers without the mask's work; on a GPU the check would sync)
            logits, view = self.lean.step(ids, position_ids.to(self.device), past, allowed)
            return logits, KVCache(view.layers(), view)
        config = self.model.config
        positions = position_ids.to(self.device)
        cache = full_cache(config, None if kv is None else kv.layers)
        if has_window(config):  # the window in the rows' own positions, not in columns
            cached = 0 if kv is None else kv.length
            if mask is None:
                mask = torch.ones((ids.shape[0], cached + ids.shape[1]), dtype=torch.long,
                                  device=ids.device)
            mask = window_masks(config, _allowed(ids, mask, cached), mask, positions,
                                self.model.dtype)
        with torch.inference_mode():
            out = self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions,
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        new = out.cache
        layers = tuple((layer.keys, layer.values) for layer in new.layers)
        return out.logits[:, -1, :], KVCache(layers)


def _backs(view: KVView | None, layers: tuple[tuple[Any, Any], ...]) -> bool:
    """Whether `view` is exactly what `layers` show (a cache rebuilt with other tensors, e.g.
    by `dataclasses.replace`, keeps a stale view: then the layers are what counts)."""
    if view is None:
        return False
    mine = view.layers()
    if len(mine) != len(layers):
        return False
    pairs = [(a, b) for (ka, va), (kb, vb) in zip(mine, layers, strict=True)
             for a, b in ((ka, kb), (va, vb))]
    return all(a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
               for a, b in pairs)


def _allowed(ids: Any, mask: Any, past: int) -> Any:
    """The attention mask [B, 1, T, past + T] of one engine step: a new token attends to the real
    columns up to itself, and always to itself (so a padding row never attends to nothing)."""
    import torch

    b, t = ids.shape
    if mask is None:
        mask = torch.ones((b, past + t), dtype=torch.long, device=ids.device)
    if t == 1:  # a decode step: the causal part allows every column; the new one always
        allowed = mask != 0
        allowed[:, -1] = True
        return allowed[:, None, None, :]
    causal = torch.ones((t, past + t), dtype=torch.bool, device=ids.device).tril(past)
    itself = torch.zeros_like(causal)
    itself[:, past:] = torch.eye(t, dtype=torch.bool, device=ids.device)
    return ((mask.bool()[:, None, :] & causal[None]) | itself[None])[:, None]


_MODELS: dict[tuple[str, str, str], Any] = {}


def load_target(device: str = "cpu", dtype: str = "float32", path: str | None = None
                ) -> HFStepModel:
    """The shipped pycode target (or a local checkpoint at `path`) as a step model, cached per
    process. The shipped target is a plain Llama, read by torch alone (`lab.models.plain_llama`:
    the grader and the learner's child each skip transformers' ~2.5 s of imports); a learner's
    own checkpoint, of any family, through transformers."""
    key = (device, dtype, path or "pycode-target")
    if key not in _MODELS:
        from lab.models import load_model, resolve_device, resolve_dtype

        if path is None:
            from lab.models.plain_llama import load_plain_llama

            dev = resolve_device(device)
            _MODELS[key] = HFStepModel(load_plain_llama(MODELS_DIR / "pycode-target", dev,
                                                        resolve_dtype(dtype, dev)))
        else:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # quiet output
            _MODELS[key] = HFStepModel(load_model(path, device=device, dtype=dtype))
    model: HFStepModel = _MODELS[key]
    return model


# -- the request and the events every engine speaks ------------------------------------------
@dataclass(frozen=True)
class Request:
    """One generation request. Token ids only; greedy decoding.

    stop_token_ids: generation stops after emitting any of these (the stop token is included).
    stop_sequences: generation stops once the output ends with one of these token sequences
    (included too; a sequence may span several generated tokens).
    """

    prompt: tuple[int, ...]
    max_tokens: int
    stop_token_ids: tuple[int, ...] = ()
    stop_sequences: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class Token:
    """One generated token of one request, streamed as soon as it is produced."""

    request_id: int
    token: int


@dataclass(frozen=True)
class Finish:
    """The one terminal event of a request: "stop", "length", "abort" (cancelled or engine shut
    down) or "error" (its input made the model raise)."""

    request_id: int
    reason: str


Event = Token | Finish
