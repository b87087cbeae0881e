"""A plain Llama checkpoint (the shipped pycode target) as torch modules alone: no transformers.

Why: a grading of batch-engine loads the shipped target in two processes (the learner's child
runs their engine on it, the grader computes the hidden case's answer), and importing
transformers' Llama costs ~2.5 s of CPU in each (it pulls torch._dynamo and
torch.distributed.tensor), more than the model's whole work in a level. The shipped target is a
plain Llama, so its module tree is rebuilt here from `config.json` and `model.safetensors`:
the same module and parameter names as transformers' `LlamaForCausalLM` (so `LeanLlama`, which
recognises a Llama by its class name and reads those modules, runs it unchanged), the same
weights, and a rotary table computed by the same arithmetic (bit-identical: tests/models).

Its `forward` is the model's own no-cache forward over whole sequences, written out from the
Llama equations with none of `LeanLlama`'s code (separate q/k/v projections, `rotate_half`,
keys and values repeated per head group, a causal SDPA): the ground truth a grading judges an
engine by never runs through the step wrapper the engine runs on. Learners' own `--target`
checkpoints of any family keep transformers' loader (`lab.models.load_model`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

WEIGHTS = "model.safetensors"


class PlainConfig:
    """`config.json` as attributes, with the attention implementation `LeanLlama` checks."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.__dict__.update(doc)
        self._attn_implementation = "sdpa"
        self.num_hidden_layers = int(doc["num_hidden_layers"])
        self.num_attention_heads = int(doc["num_attention_heads"])
        self.num_key_value_heads = int(doc.get("num_key_value_heads")
                                       or doc["num_attention_heads"])
        self.rms_norm_eps = float(doc.get("rms_norm_eps", 1e-6))
        self.tie_word_embeddings = bool(doc.get("tie_word_embeddings", False))
        rope = doc.get("rope_parameters") or doc.get("rope_scaling") or {}
        self.rope_theta = float(rope.get("rope_theta", doc.get("rope_theta", 10000.0)))
        self.head_dim = int(doc.get("head_dim") or doc["hidden_size"] // doc["num_attention_heads"])


def plain_llama_fault(doc: dict[str, Any], folder: Path) -> str:
    """Why the checkpoint in `folder` (its config `doc`) is not a plain Llama this module loads
    exactly, or "" when it is."""
    rope = doc.get("rope_parameters") or doc.get("rope_scaling") or {}
    faults = [
        (doc.get("architectures") != ["LlamaForCausalLM"],
         f"architectures {doc.get('architectures')}, not ['LlamaForCausalLM']"),
        (doc.get("hidden_act", "silu") != "silu", f"hidden_act {doc.get('hidden_act')!r}"),
        (bool(doc.get("attention_bias") or doc.get("mlp_bias")), "biased projections"),
        (rope.get("rope_type", "default") != "default",
         f"rope_type {rope.get('rope_type')!r} (only the default RoPE)"),
        (not (folder / WEIGHTS).is_file(), f"no single {WEIGHTS}"),
    ]
    return next((why for bad, why in faults if bad), "")


class Weight(nn.Module):
    """A projection's weight [out, in] (no bias), under the name transformers gives it."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)


class Embedding(nn.Module):
    """The token embedding [vocab, hidden] (a lookup)."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.embedding(ids, self.weight)


class LlamaRMSNorm(nn.Module):
    """weight * x / sqrt(mean(x^2) + eps), normalised in fp32 and cast back."""

    def __init__(self, weight: torch.Tensor, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight, requires_grad=False)
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * x.to(dtype)


class LlamaRotaryEmbedding(nn.Module):
    """The default RoPE: cos and sin [B, T, head_dim] of positions [B, T]; inverse frequencies
    1 / theta^(2i/d) computed in fp32, as transformers computes them."""

    def __init__(self, config: PlainConfig) -> None:
        super().__init__()
        dim = config.head_dim
        self.inv_freq = 1.0 / (config.rope_theta
                               ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> tuple[torch.Tensor,
                                                                        torch.Tensor]:
        freqs = positions[..., None].float() * self.inv_freq.to(device=x.device,
                                                                dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class LlamaAttention(nn.Module):
    def __init__(self, w: dict[str, torch.Tensor], head_dim: int) -> None:
        super().__init__()
        self.q_proj, self.k_proj = Weight(w["q_proj"]), Weight(w["k_proj"])
        self.v_proj, self.o_proj = Weight(w["v_proj"]), Weight(w["o_proj"])
        self.head_dim = head_dim
        self.scaling = head_dim ** -0.5


class LlamaMLP(nn.Module):
    def __init__(self, w: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.gate_proj, self.up_proj = Weight(w["gate_proj"]), Weight(w["up_proj"])
        self.down_proj = Weight(w["down_proj"])


class LlamaDecoderLayer(nn.Module):
    def __init__(self, w: dict[str, torch.Tensor], config: PlainConfig) -> None:
        super().__init__()
        eps = config.rms_norm_eps
        self.self_attn = LlamaAttention(w, config.head_dim)
        self.mlp = LlamaMLP(w)
        self.input_layernorm = LlamaRMSNorm(w["input_layernorm"], eps)
        self.post_attention_layernorm = LlamaRMSNorm(w["post_attention_layernorm"], eps)


class LlamaModel(nn.Module):
    def __init__(self, weights: dict[str, torch.Tensor], config: PlainConfig) -> None:
        super().__init__()
        self.embed_tokens = Embedding(weights["model.embed_tokens.weight"])
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(_layer_weights(weights, n), config)
            for n in range(config.num_hidden_layers))
        self.norm = LlamaRMSNorm(weights["model.norm.weight"], config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config)


@dataclass(frozen=True)
class CausalLMOutput:
    logits: torch.Tensor  # [B, T, V]


class LlamaForCausalLM(nn.Module):
    """transformers' `LlamaForCausalLM` module tree (named like it, so the lab's Llama paths
    recognise it) with a no-cache forward of its own."""

    def __init__(self, weights: dict[str, torch.Tensor], config: PlainConfig) -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(weights, config)
        head = weights.get("lm_head.weight")
        self.lm_head = Weight(self.model.embed_tokens.weight if head is None
                              or config.tie_word_embeddings else head)

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def forward(self, input_ids: torch.Tensor, use_cache: bool = False) -> CausalLMOutput:
        """Logits [B, T, V] of every position of whole sequences `input_ids` [B, T] (no
        padding, no cache: `use_cache` must be False)."""
        if use_cache:
            raise ValueError("this forward keeps no cache: call it with use_cache=False")
        import torch.nn.functional as F

        inner, config = self.model, self.config
        b, t = input_ids.shape
        heads, kv_heads, d = config.num_attention_heads, config.num_key_value_heads, config.head_dim
        h = inner.embed_tokens(input_ids)
        positions = torch.arange(t, device=input_ids.device)[None].expand(b, t)
        cos, sin = inner.rotary_emb(h, positions)
        cos, sin = cos[:, None], sin[:, None]  # [B, 1, T, d]
        for layer in cast(list[LlamaDecoderLayer], list(inner.layers)):
            a = layer.self_attn
            x = layer.input_layernorm(h)
            q = F.linear(x, a.q_proj.weight).view(b, t, heads, d).transpose(1, 2)
            k = F.linear(x, a.k_proj.weight).view(b, t, kv_heads, d).transpose(1, 2)
            v = F.linear(x, a.v_proj.weight).view(b, t, kv_heads, d).transpose(1, 2)
            q, k = q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin
            k = k.repeat_interleave(heads // kv_heads, dim=1)
            v = v.repeat_interleave(heads // kv_heads, dim=1)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=a.scaling)
            h = h + F.linear(out.transpose(1, 2).reshape(b, t, heads * d), a.o_proj.weight)
            x = layer.post_attention_layernorm(h)
            m = layer.mlp
            h = h + F.linear(F.silu(F.linear(x, m.gate_proj.weight))
                             * F.linear(x, m.up_proj.weight), m.down_proj.weight)
        return CausalLMOutput(F.linear(inner.norm(h), self.lm_head.weight))


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _layer_weights(weights: dict[str, torch.Tensor], n: int) -> dict[str, torch.Tensor]:
    """Layer `n`'s tensors by their short names (q_proj, ..., input_layernorm)."""
    prefix = f"model.layers.{n}."
    return {key[len(prefix):].split(".")[-2]: value for key, value in weights.items()
            if key.startswith(prefix)}


def load_plain_llama(folder: Path, device: str = "cpu",
                     dtype: torch.dtype = torch.float32) -> LlamaForCausalLM:
    """The plain Llama in `folder` on `device` in `dtype` (weights cast exactly as transformers'
    loader casts them); ValueError naming the fault for any other checkpoint."""
    from safetensors.torch import load_file

    doc = json.loads((folder / "config.json").read_text())
    fault = plain_llama_fault(doc, folder)
    if fault:
        raise ValueError(f"{folder} is not a plain Llama checkpoint this loader reads: {fault}")
    weights = {k: v.to(device=device, dtype=dtype)
               for k, v in load_file(str(folder / WEIGHTS)).items()}
    return LlamaForCausalLM(weights, PlainConfig(doc)).eval()
