"""What the lab hands a paged decoder (level 4): the shipped target run layer by layer over a paged
KV pool, and the seeded inputs of the gather cases.

`PagedDecoder.step` runs one decode step of a Llama model for a batch of sequences, one new token
each: embeddings, then per layer q/k/v with rotary positions, the learner's `write_kv` stores this
token's K/V at its slot, the learner's `paged_attention` attends over every cached token through
the block tables, then the output projection and the MLP. The weights are the model's own, so
greedy decoding through this path equals the model's own greedy decoding when the pool, the
tables and the gather are right.

Imported in the sandbox child (drive.CHILD_MODULES) and by the grader to rebuild gather inputs.
torch is imported lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_MODELS: dict[tuple[str, str], Any] = {}


def load_model(device: str, path: str | None = None) -> Any:
    """The shipped pycode target (or the checkpoint at `path`) in fp32, cached per process."""
    key = (device, path or "pycode-target")
    if key not in _MODELS:
        from transformers.utils import logging as hf_logging

        from lab.models import load_model as _load

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        _MODELS[key] = _load(path or "pycode-target", device=device, dtype="float32")
    return _MODELS[key]


class PagedDecoder:
    """A Llama-family model stepped one token per sequence over a paged KV pool.

    The pool is two tensors [layers, num_blocks, block_size, kv_heads, head_dim] (K and V), on the
    model's device, zero-filled (fresh for every decoder)."""

    def __init__(self, model: Any, num_blocks: int, block_size: int) -> None:
        import torch

        self.model = model
        cfg = model.config
        self.heads = int(cfg.num_attention_heads)
        self.kv_heads = int(cfg.num_key_value_heads or cfg.num_attention_heads)
        self.head_dim = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // self.heads)
        self.layers = int(cfg.num_hidden_layers)
        self.device = next(model.parameters()).device
        self.block_size = block_size
        shape = (self.layers, num_blocks, block_size, self.kv_heads, self.head_dim)
        self.k_pool = torch.zeros(shape, dtype=torch.float32, device=self.device)
        self.v_pool = torch.zeros(shape, dtype=torch.float32, device=self.device)

    def copy_block(self, src: int, dst: int) -> None:
        """Copy-on-write: block dst gets block src's K/V in every layer."""
        self.k_pool[:, dst] = self.k_pool[:, src]
        self.v_pool[:, dst] = self.v_pool[:, src]

    def prefill(self, prompt: list[int], slots: list[tuple[int, int]],
                write_kv: Callable[..., Any]) -> Any:
        """Run the model over a whole prompt (its own attention, no pool reads), store every
        position's K/V at its slot with the learner's `write_kv`, return the last logits [vocab].
        """
        import torch
        from transformers import DynamicCache

        dev = self.device
        ids = torch.tensor([prompt], dtype=torch.long, device=dev)
        blocks = torch.tensor([s[0] for s in slots], dtype=torch.long, device=dev)
        offsets = torch.tensor([s[1] for s in slots], dtype=torch.long, device=dev)
        with torch.inference_mode():
            out = self.model(input_ids=ids, cache=DynamicCache(config=self.model.config),
                             use_cache=True, logits_to_keep=1)
            for li, layer in enumerate(out.cache.layers):
                # [1, kv_heads, n, head_dim] -> [n, kv_heads, head_dim] (keys already rotated)
                write_kv(self.k_pool[li], self.v_pool[li], blocks, offsets,
                         layer.keys[0].transpose(0, 1), layer.values[0].transpose(0, 1))
            return out.logits[0, -1].float()

    def step(self, token_ids: list[int], positions: list[int], slots: list[tuple[int, int]],
             tables: list[list[int]], write_kv: Callable[..., Any],
             paged_attention: Callable[..., Any]) -> Any:
        """Logits [B, vocab] for one new token per sequence.

        slots[i] = (block, offset) where sequence i's new token is stored; tables[i] = its block
        table (padded here with block 0 to the longest); its context is positions[i] + 1 tokens."""
        import torch
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

        dev = self.device
        B, H, KVH, D = len(token_ids), self.heads, self.kv_heads, self.head_dim
        ids = torch.tensor(token_ids, dtype=torch.long, device=dev)[:, None]
        pos = torch.tensor(positions, dtype=torch.long, device=dev)[:, None]
        blocks = torch.tensor([s[0] for s in slots], dtype=torch.long, device=dev)
        offsets = torch.tensor([s[1] for s in slots], dtype=torch.long, device=dev)
        width = max(len(t) for t in tables)
        table_t = torch.tensor([list(t) + [0] * (width - len(t)) for t in tables],
                               dtype=torch.long, device=dev)
        ctx_lens = pos[:, 0] + 1
        core = self.model.model
        with torch.inference_mode():
            h = core.embed_tokens(ids)
            cos, sin = core.rotary_emb(h, pos)
            for li, layer in enumerate(core.layers):
                attn = layer.self_attn
                x = layer.input_layernorm(h)
                q = attn.q_proj(x).view(B, 1, H, D).transpose(1, 2)
                k = attn.k_proj(x).view(B, 1, KVH, D).transpose(1, 2)
                v = attn.v_proj(x).view(B, KVH, D)
                q, k = apply_rotary_pos_emb(q, k, cos, sin)
                write_kv(self.k_pool[li], self.v_pool[li], blocks, offsets, k[:, :, 0], v)
                out = paged_attention(q[:, :, 0], self.k_pool[li], self.v_pool[li], table_t,
                                      ctx_lens, float(attn.scaling))
                h = h + attn.o_proj(out.reshape(B, 1, H * D))
                h = h + layer.mlp(layer.post_attention_layernorm(h))
            return self.model.lm_head(core.norm(h))[:, 0].float()


def gather_inputs(p: dict[str, Any], device: str = "cpu") -> dict[str, Any]:
    """The seeded inputs of a gather case, identical wherever they are built (CPU generator).

    p: seed, heads, kv_heads, head_dim, block_size, num_blocks, tables (lists of block ids),
    context_lens. Tables are padded with `pad` (default 0) to the longest; pool entries hold
    random values everywhere, so attending past a context length or through the wrong block shows.
    """
    import torch

    g = torch.Generator().manual_seed(int(p["seed"]))
    B, H, KVH, D = len(p["tables"]), p["heads"], p["kv_heads"], p["head_dim"]
    shape = (p["num_blocks"], p["block_size"], KVH, D)
    k_cache = torch.randn(shape, generator=g)
    v_cache = torch.randn(shape, generator=g)
    q = torch.randn((B, H, D), generator=g)
    width = max(len(t) for t in p["tables"])
    pad = int(p.get("pad", 0))
    tables = torch.tensor([list(t) + [pad] * (width - len(t)) for t in p["tables"]],
                          dtype=torch.long)
    lens = torch.tensor(p["context_lens"], dtype=torch.long)
    return {"q": q.to(device), "k_cache": k_cache.to(device), "v_cache": v_cache.to(device),
            "block_tables": tables.to(device), "context_lens": lens.to(device),
            "scale": float(D) ** -0.5}
