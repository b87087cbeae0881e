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
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KVCache:
    """Per-layer (key, value) tensors shaped [rows, kv_heads, length, head_dim].

    A row is one sequence in the batch; a column is one cached position (real or padding, the
    attention mask says which). Operations return new caches; nothing is modified in place.
    """

    layers: tuple[tuple[Any, Any], ...]

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
        return KVCache(tuple((k[:, :, n:], v[:, :, n:]) for k, v in self.layers))


class HFStepModel:
    """A Hugging Face causal LM behind the `forward` above (fp32 on CPU: exact, batch-invariant
    argmax in practice)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        config = model.config
        self.vocab_size: int = int(config.vocab_size)
        self.max_positions: int = int(config.max_position_embeddings)
        self.pad_id: int = int(config.pad_token_id if config.pad_token_id is not None else 0)
        self.device: Any = next(model.parameters()).device
        self.calls = 0
        # a plain Llama runs through `_lean_llama_step` (same ops, without the per-call overhead
        # of the generic forward: ~2x faster per decode step on CPU); anything else through HF
        self.lean = _is_plain_llama(model)
        self._fused_weights: list[tuple[Any, Any]] | None = None

    def _fused(self) -> list[tuple[Any, Any]]:
        """Per layer, the q/k/v and the gate/up projection weights stacked: one matmul each."""
        import torch

        if self._fused_weights is None:
            self._fused_weights = [
                (torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]),
                 torch.cat([layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight]))
                for layer in self.model.model.layers for a in [layer.self_attn]]
        return self._fused_weights

    def forward(
        self, input_ids: Any, attention_mask: Any, position_ids: Any, kv: KVCache | None
    ) -> tuple[Any, KVCache]:
        import torch
        from transformers import DynamicCache

        self.calls += 1
        if self.lean:
            return _lean_llama_step(self.model, self._fused(), input_ids.to(self.device),
                                    None if attention_mask is None
                                    else attention_mask.to(self.device),
                                    position_ids.to(self.device), kv)
        cache = DynamicCache(config=self.model.config)
        if kv is not None:
            cache = DynamicCache(ddp_cache_data=list(kv.layers), config=self.model.config)
        with torch.inference_mode():
            out = self.model(
                input_ids=input_ids.to(self.device),
                attention_mask=None if attention_mask is None else attention_mask.to(self.device),
                position_ids=position_ids.to(self.device),
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        new = out.cache
        layers = tuple((layer.keys, layer.values) for layer in new.layers)
        return out.logits[:, -1, :], KVCache(layers)


def _is_plain_llama(model: Any) -> bool:
    config = model.config
    rope = getattr(config, "rope_scaling", None) or {}
    return (type(model).__name__ == "LlamaForCausalLM" and config.hidden_act == "silu"
            and not getattr(config, "attention_bias", False)
            and not getattr(config, "mlp_bias", False)
            and rope.get("rope_type", "default") == "default"
            and config._attn_implementation in ("sdpa", "eager"))


def _lean_llama_step(model: Any, fused: list[tuple[Any, Any]], ids: Any, mask: Any,
                     positions: Any, kv: KVCache | None) -> tuple[Any, KVCache]:
    """LlamaForCausalLM's forward for one engine step, written out: the same modules and ops
    (RMSNorm, rotary embedding, grouped-query SDPA, SiLU MLP), with q/k/v and gate/up each one
    matmul over stacked weights (`fused`), logits at the last column only.
    The mask is [B, past + T]: a new token attends to the real columns up to itself (and always
    to itself, so a padding row never attends to nothing)."""
    import torch
    import torch.nn.functional as F
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    inner = model.model
    b, t = ids.shape
    past = 0 if kv is None else kv.length
    if mask is None:
        mask = torch.ones((b, past + t), dtype=torch.long, device=ids.device)
    causal = torch.ones((t, past + t), dtype=torch.bool, device=ids.device).tril(past)
    itself = torch.zeros_like(causal)
    itself[:, past:] = torch.eye(t, dtype=torch.bool, device=ids.device)
    allowed = ((mask.bool()[:, None, :] & causal[None]) | itself[None])[:, None]  # [B,1,T,L+T]
    layers = []
    with torch.inference_mode():
        h = inner.embed_tokens(ids)
        cos, sin = inner.rotary_emb(h, positions)
        for n, layer in enumerate(inner.layers):
            attn = layer.self_attn
            qkv_weight, gate_up_weight = fused[n]
            x = layer.input_layernorm(h)
            qkv = F.linear(x, qkv_weight)
            nq, nk = attn.q_proj.out_features, attn.k_proj.out_features
            q, k, v = qkv[..., :nq], qkv[..., nq:nq + nk], qkv[..., nq + nk:]
            q = q.reshape(b, t, -1, attn.head_dim).transpose(1, 2)
            k = k.reshape(b, t, -1, attn.head_dim).transpose(1, 2)
            v = v.reshape(b, t, -1, attn.head_dim).transpose(1, 2)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            if kv is not None:
                k = torch.cat([kv.layers[n][0], k], 2)
                v = torch.cat([kv.layers[n][1], v], 2)
            layers.append((k, v))
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=attn.scaling,
                                                 enable_gqa=k.shape[1] != q.shape[1])
            h = h + attn.o_proj(out.transpose(1, 2).reshape(b, t, -1))
            gate, up = F.linear(layer.post_attention_layernorm(h), gate_up_weight).chunk(2, -1)
            h = h + layer.mlp.down_proj(F.silu(gate) * up)
        logits = model.lm_head(inner.norm(h[:, -1:]))[:, -1]
    return logits, KVCache(tuple(layers))


_MODELS: dict[tuple[str, str, str], Any] = {}


def load_target(device: str = "cpu", dtype: str = "float32", path: str | None = None
                ) -> HFStepModel:
    """The shipped pycode target (or a local checkpoint at `path`) as a step model, cached per
    process."""
    key = (device, dtype, path or "pycode-target")
    if key not in _MODELS:
        from transformers.utils import logging as hf_logging

        from lab.models import load_model

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # quiet output

        _MODELS[key] = HFStepModel(load_model(path or "pycode-target", device=device,
                                              dtype=dtype))
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
