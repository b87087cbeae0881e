"""What the lab hands a paged decoder (level 4): the shipped target run layer by layer over a paged
KV pool, and the seeded inputs of the gather cases.

`LlamaWeights` reads a Llama checkpoint's safetensors and does the model's arithmetic itself (so
the sandbox never imports transformers). `PagedDecoder.prefill` runs a prompt and stores its K/V
at the sequence's slots with the learner's `write_kv`; `PagedDecoder.step` runs one decode step
for a batch of sequences, one new token each: per layer q/k/v with rotary positions, the
learner's `write_kv` stores the token's K/V at its slot, the learner's `paged_attention` attends
over every cached token through the block tables, then the output projection and the MLP.
Greedy decoding through this path equals the model's own greedy decoding (checked against
transformers in tests/paged_kv) when the pool, the tables and the gather are right.

Imported in the sandbox child (drive.CHILD_MODULES) and by the grader to rebuild gather inputs.
torch is imported lazily.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

SHIPPED_TARGET = Path(__file__).resolve().parents[2] / "models" / "pycode-target"
_MODELS: dict[tuple[str, str], Any] = {}
_POOLS: dict[tuple[Any, ...], tuple[Any, Any]] = {}  # a timed gather case's K/V pool


def load_model(device: str, path: str | None = None) -> LlamaWeights:
    """The shipped pycode target (or a Llama-family checkpoint folder at `path` with one
    model.safetensors) in fp32 on `device`, cached per process."""
    key = (device, path or "pycode-target")
    if key not in _MODELS:  # no lab.models import: the sandbox child may import only this module
        folder = Path(path) if path else SHIPPED_TARGET
        if not (folder / "config.json").is_file() or not (folder / "model.safetensors").is_file():
            raise FileNotFoundError(f"{folder}: expected config.json and model.safetensors")
        _MODELS[key] = LlamaWeights(folder, device)
    model: LlamaWeights = _MODELS[key]
    return model


class LlamaWeights:
    """A Llama checkpoint read straight from safetensors (no transformers import: the sandbox
    starts in seconds, not tens of seconds) with the model's own forward arithmetic: RMSNorm,
    rotary positions (default RoPE), grouped-query attention, SiLU MLP, tied or separate head."""

    def __init__(self, folder: Path, device: str) -> None:
        import torch
        from safetensors.torch import load_file

        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        if cfg.get("model_type") != "llama":
            raise ValueError(f"{folder}: paged-kv runs Llama-family checkpoints, not "
                             f"{cfg.get('model_type')!r}")
        w = {k: v.to(device=device, dtype=torch.float32)
             for k, v in load_file(str(folder / "model.safetensors")).items()}
        self.heads = int(cfg["num_attention_heads"])
        self.kv_heads = int(cfg.get("num_key_value_heads") or self.heads)
        self.head_dim = int(cfg.get("head_dim") or cfg["hidden_size"] // self.heads)
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.vocab_size = int(cfg["vocab_size"])
        self.device = torch.device(device)
        self.embed = w["model.embed_tokens.weight"]
        self.norm = w["model.norm.weight"]
        self.lm_head = w.get("lm_head.weight", self.embed)
        self.w = w
        rope = cfg.get("rope_parameters") or {}
        theta = float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0)))
        exponents = torch.arange(0, self.head_dim, 2, dtype=torch.int64).float() / self.head_dim
        self.inv_freq = (1.0 / theta ** exponents).to(self.device)
        self.scale = self.head_dim ** -0.5

    def layer(self, i: int, name: str) -> Any:
        return self.w[f"model.layers.{i}.{name}.weight"]

    def rms(self, x: Any, weight: Any) -> Any:
        import torch

        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rotary(self, positions: Any) -> tuple[Any, Any]:
        """cos, sin [n, head_dim] for integer positions [n]."""
        import torch

        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    @staticmethod
    def rotate(x: Any, cos: Any, sin: Any) -> Any:
        """x [n, heads, head_dim] rotated by its positions (cos/sin [n, head_dim])."""
        import torch

        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos[:, None, :] + rotated * sin[:, None, :]

    def qkv(self, i: int, h: Any, cos: Any, sin: Any) -> tuple[Any, Any, Any]:
        """Rotated q [n, heads, D], k [n, kv_heads, D] and v [n, kv_heads, D] of layer i."""
        n = h.shape[0]
        x = self.rms(h, self.layer(i, "input_layernorm"))
        q = (x @ self.layer(i, "self_attn.q_proj").T).view(n, self.heads, self.head_dim)
        k = (x @ self.layer(i, "self_attn.k_proj").T).view(n, self.kv_heads, self.head_dim)
        v = (x @ self.layer(i, "self_attn.v_proj").T).view(n, self.kv_heads, self.head_dim)
        return self.rotate(q, cos, sin), self.rotate(k, cos, sin), v

    def finish_layer(self, i: int, h: Any, attn: Any) -> Any:
        import torch

        h = h + attn.reshape(h.shape[0], -1) @ self.layer(i, "self_attn.o_proj").T
        x = self.rms(h, self.layer(i, "post_attention_layernorm"))
        gate = torch.nn.functional.silu(x @ self.layer(i, "mlp.gate_proj").T)
        return h + (gate * (x @ self.layer(i, "mlp.up_proj").T)) @ self.layer(i, "mlp.down_proj").T

    def logits(self, h: Any) -> Any:
        return self.rms(h, self.norm) @ self.lm_head.T


class PagedDecoder:
    """A Llama-family model stepped one token per sequence over a paged KV pool.

    The pool is two tensors [layers, num_blocks, block_size, kv_heads, head_dim] (K and V), on the
    model's device, zero-filled (fresh for every decoder)."""

    def __init__(self, model: LlamaWeights, num_blocks: int, block_size: int) -> None:
        import torch

        self.model = model
        self.block_size = block_size
        shape = (model.layers, num_blocks, block_size, model.kv_heads, model.head_dim)
        self.k_pool = torch.zeros(shape, dtype=torch.float32, device=model.device)
        self.v_pool = torch.zeros(shape, dtype=torch.float32, device=model.device)

    def copy_block(self, src: int, dst: int) -> None:
        """Copy-on-write: block dst gets block src's K/V in every layer."""
        self.k_pool[:, dst] = self.k_pool[:, src]
        self.v_pool[:, dst] = self.v_pool[:, src]

    def prefill(self, prompt: list[int], slots: list[tuple[int, int]],
                write_kv: Callable[..., Any]) -> Any:
        """Run the model over a whole prompt (causal attention among its own tokens, no pool
        reads), store every position's K/V at its slot with the learner's `write_kv`, and
        return the last position's logits [vocab]."""
        import torch

        m, dev = self.model, self.model.device
        n = len(prompt)
        ids = torch.tensor(prompt, dtype=torch.long, device=dev)
        blocks = torch.tensor([s[0] for s in slots], dtype=torch.long, device=dev)
        offsets = torch.tensor([s[1] for s in slots], dtype=torch.long, device=dev)
        cos, sin = m.rotary(torch.arange(n, device=dev))
        causal = torch.ones(n, n, dtype=torch.bool, device=dev).tril()
        group = m.heads // m.kv_heads
        with torch.inference_mode():
            h = m.embed[ids]
            for i in range(m.layers):
                q, k, v = m.qkv(i, h, cos, sin)
                write_kv(self.k_pool[i], self.v_pool[i], blocks, offsets, k, v)
                keys = k.repeat_interleave(group, dim=1)
                values = v.repeat_interleave(group, dim=1)
                scores = torch.einsum("qhd,khd->hqk", q, keys) * m.scale
                scores = scores.masked_fill(~causal[None], float("-inf"))
                attn = torch.einsum("hqk,khd->qhd", torch.softmax(scores, -1), values)
                h = m.finish_layer(i, h, attn)
            return m.logits(h[-1:])[0]

    def step(self, token_ids: list[int], positions: list[int], slots: list[tuple[int, int]],
             tables: list[list[int]], write_kv: Callable[..., Any],
             paged_attention: Callable[..., Any]) -> Any:
        """Logits [B, vocab] for one new token per sequence.

        slots[i] = (block, offset) where sequence i's new token is stored; tables[i] = its block
        table (padded here with block 0 to the longest); its context is positions[i] + 1 tokens."""
        import torch

        m, dev = self.model, self.model.device
        ids = torch.tensor(token_ids, dtype=torch.long, device=dev)
        pos = torch.tensor(positions, dtype=torch.long, device=dev)
        blocks = torch.tensor([s[0] for s in slots], dtype=torch.long, device=dev)
        offsets = torch.tensor([s[1] for s in slots], dtype=torch.long, device=dev)
        width = max(len(t) for t in tables)
        table_t = torch.tensor([list(t) + [0] * (width - len(t)) for t in tables],
                               dtype=torch.long, device=dev)
        cos, sin = m.rotary(pos)
        with torch.inference_mode():
            h = m.embed[ids]
            for i in range(m.layers):
                q, k, v = m.qkv(i, h, cos, sin)
                write_kv(self.k_pool[i], self.v_pool[i], blocks, offsets, k, v)
                attn = paged_attention(q, self.k_pool[i], self.v_pool[i], table_t, pos + 1,
                                       m.scale)
                h = m.finish_layer(i, h, attn)
            return m.logits(h)


def gather_inputs(p: dict[str, Any], device: str = "cpu") -> dict[str, Any]:
    """The seeded inputs of a gather case, identical wherever they are built (CPU generator).

    p: seed, heads, kv_heads, head_dim, block_size, num_blocks, tables (lists of block ids),
    context_lens. Tables are padded with `pad` (default 0) to the longest; pool entries hold
    random values everywhere, so attending past a context length or through the wrong block shows.

    A timed call (`p["call"]`, its own seed: drive.run) asks a new question without redrawing the
    pool, whose ~1M normal draws cost as much as the gather being timed (they would dilute a slow
    gather's ratio and lengthen every batch): it gets the case's pool, drawn once per process,
    with K and V scaled (on the device) by factors drawn for the call, queries of its own, and
    its own block tables (the case's block ids relabelled by a permutation drawn for the call:
    the same work, other blocks), so nothing worked out from one call's tables (a per-token
    index built in a Python loop, then cached) answers the next.
    """
    import torch

    B, H, KVH, D = len(p["tables"]), p["heads"], p["kv_heads"], p["head_dim"]
    shape = (p["num_blocks"], p["block_size"], KVH, D)
    if "call" in p:
        key = (int(p["seed"]), shape, device)
        if key not in _POOLS:
            g = torch.Generator().manual_seed(int(p["seed"]))
            _POOLS.clear()  # one timed case at a time: keep only its pool
            _POOLS[key] = (torch.randn(shape, generator=g).to(device),
                           torch.randn(shape, generator=g).to(device))
        g = torch.Generator().manual_seed(int(p["seed"]) * 1_000_003 + int(p["call"]) % 1_000_003)
        k_scale, v_scale = (0.5 + 1.5 * torch.rand(2, generator=g)).tolist()
        k_cache, v_cache = _POOLS[key][0] * k_scale, _POOLS[key][1] * v_scale
    else:
        g = torch.Generator().manual_seed(int(p["seed"]))
        k_cache = torch.randn(shape, generator=g)
        v_cache = torch.randn(shape, generator=g)
    q = torch.randn((B, H, D), generator=g)
    width = max(len(t) for t in p["tables"])
    pad = int(p.get("pad", 0))
    rows = [list(t) for t in p["tables"]]
    if "call" in p:
        relabel = torch.randperm(int(p["num_blocks"]), generator=g).tolist()
        rows = [[relabel[b] for b in t] for t in rows]
    tables = torch.tensor([t + [pad] * (width - len(t)) for t in rows], dtype=torch.long)
    lens = torch.tensor(p["context_lens"], dtype=torch.long)
    return {"q": q.to(device), "k_cache": k_cache.to(device), "v_cache": v_cache.to(device),
            "block_tables": tables.to(device), "context_lens": lens.to(device),
            "scale": float(D) ** -0.5}
