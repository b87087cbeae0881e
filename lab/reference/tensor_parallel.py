"""Reference for `tensor-parallel`: Megatron-style sharding on torch.distributed.

Level 1: `ColumnParallelLinear` keeps rows [r*out/W, (r+1)*out/W) of W [out, in] (and of the bias)
and needs no collective unless the full output is wanted (one all-gather); `RowParallelLinear`
keeps columns [r*in/W, (r+1)*in/W), multiplies its slice of the input and sums the partial
products with one all-reduce; its bias is added once, after the sum.
Level 2: the SwiGLU MLP is gate/up column-parallel (no gather) then down row-parallel: one
all-reduce per block. Attention splits the query heads; key/value heads are split too when W
divides them, else each rank keeps (replicates) the KV heads its query heads use.
Level 3: greedy decoding of a Llama checkpoint at any W, each rank reading only its shards from
the safetensors file and caching only its KV heads: two all-reduces per layer per step, the
embedding and the LM head replicated (no collective for them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from lab.exercises.tensor_parallel.runtime import read_config, rms_norm, rope


def _split(size: int, world: int, what: str) -> int:
    if size % world:
        raise ValueError(f"{what} = {size} does not divide by the world size {world}: "
                         f"{size} / {world} is not a whole shard")
    return size // world


class ColumnParallelLinear:
    """y = x W^T + b with W's output rows split across ranks."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, group: Any,
                 gather_output: bool = True) -> None:
        self.group = group
        self.world = dist.get_world_size(group)
        rank = dist.get_rank(group)
        n = _split(weight.shape[0], self.world, "out_features")
        self.weight = weight[rank * n:(rank + 1) * n].contiguous()
        self.bias = None if bias is None else bias[rank * n:(rank + 1) * n].contiguous()
        self.gather_output = gather_output

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.linear(x, self.weight, self.bias)
        if not self.gather_output or self.world == 1:
            return y
        parts = [torch.empty_like(y) for _ in range(self.world)]
        dist.all_gather(parts, y.contiguous(), group=self.group)
        return torch.cat(parts, dim=-1)


class RowParallelLinear:
    """y = x W^T + b with W's input columns split across ranks: partial sums all-reduced."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, group: Any,
                 input_is_parallel: bool = True) -> None:
        self.group = group
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.n = _split(weight.shape[1], self.world, "in_features")
        self.weight = weight[:, self.rank * self.n:(self.rank + 1) * self.n].contiguous()
        self.bias = bias
        self.input_is_parallel = input_is_parallel

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.input_is_parallel:
            x = x[..., self.rank * self.n:(self.rank + 1) * self.n]
        y = F.linear(x, self.weight)
        if self.world > 1:
            dist.all_reduce(y, group=self.group)
        return y if self.bias is None else y + self.bias


class ParallelMLP:
    """down(silu(gate(x)) * up(x)): gate/up column-parallel, down row-parallel."""

    def __init__(self, gate_weight: torch.Tensor, up_weight: torch.Tensor,
                 down_weight: torch.Tensor, group: Any) -> None:
        self.gate = ColumnParallelLinear(gate_weight, None, group, gather_output=False)
        self.up = ColumnParallelLinear(up_weight, None, group, gather_output=False)
        self.down = RowParallelLinear(down_weight, None, group, input_is_parallel=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y: torch.Tensor = self.down.forward(F.silu(self.gate.forward(x)) * self.up.forward(x))
        return y


def head_plan(num_heads: int, num_kv_heads: int, world_size: int, rank: int) -> dict[str, Any]:
    """This rank's query heads and the KV heads it holds; replicated when W does not divide the
    KV heads (each rank then keeps the KV heads its own query heads read)."""
    per = _split(num_heads, world_size, "num_heads")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_heads = {num_heads} is not a multiple of num_kv_heads = "
                         f"{num_kv_heads}")
    group = num_heads // num_kv_heads
    q_heads = list(range(rank * per, (rank + 1) * per))
    if num_kv_heads % world_size == 0:
        k = num_kv_heads // world_size
        return {"q_heads": q_heads, "kv_heads": list(range(rank * k, (rank + 1) * k)),
                "replicated": False}
    kv = sorted({h // group for h in q_heads})
    return {"q_heads": q_heads, "kv_heads": kv, "replicated": True,
            "note": f"world size {world_size} does not divide {num_kv_heads} KV heads: "
                    f"each rank keeps the KV heads its query heads use (replicated)"}


class ParallelAttention:
    """Causal self-attention with this rank's query heads and the KV heads they read; the output
    projection is row-parallel (one all-reduce)."""

    def __init__(self, q_weight: torch.Tensor, k_weight: torch.Tensor, v_weight: torch.Tensor,
                 o_weight: torch.Tensor, num_heads: int, num_kv_heads: int, group: Any,
                 rope_theta: float = 10000.0) -> None:
        self.group = group
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        self.plan = head_plan(num_heads, num_kv_heads, world, rank)
        self.head_dim = q_weight.shape[0] // num_heads
        d = self.head_dim

        def rows(w: torch.Tensor, heads: list[int]) -> torch.Tensor:
            return torch.cat([w[h * d:(h + 1) * d] for h in heads]).contiguous()

        self.q = rows(q_weight, self.plan["q_heads"])
        self.k = rows(k_weight, self.plan["kv_heads"])
        self.v = rows(v_weight, self.plan["kv_heads"])
        group_size = num_heads // num_kv_heads
        self.kv_of_q = [self.plan["kv_heads"].index(h // group_size)
                        for h in self.plan["q_heads"]]
        cols = torch.cat([torch.arange(h * d, (h + 1) * d) for h in self.plan["q_heads"]])
        self.o = o_weight[:, cols].contiguous()
        self.theta = rope_theta
        self.world = world
        self.cache_k: torch.Tensor | None = None  # [T, local kv heads, d] (level 3)
        self.cache_v: torch.Tensor | None = None

    def forward(self, x: torch.Tensor, positions: torch.Tensor,
                use_cache: bool = False) -> torch.Tensor:
        t, d = x.shape[0], self.head_dim
        q = rope(F.linear(x, self.q).view(t, -1, d), positions, self.theta)
        k = rope(F.linear(x, self.k).view(t, -1, d), positions, self.theta)
        v = F.linear(x, self.v).view(t, -1, d)
        if use_cache:
            if self.cache_k is not None and self.cache_v is not None:
                k = torch.cat([self.cache_k, k])
                v = torch.cat([self.cache_v, v])
            self.cache_k, self.cache_v = k, v
        idx = torch.tensor(self.kv_of_q, device=x.device)
        kk, vv = k[:, idx].transpose(0, 1), v[:, idx].transpose(0, 1)
        s = k.shape[0]
        mask = torch.ones(t, s, dtype=torch.bool, device=x.device).tril(s - t)
        out = F.scaled_dot_product_attention(q.transpose(0, 1), kk, vv, attn_mask=mask)
        y = F.linear(out.transpose(0, 1).reshape(t, -1), self.o)
        if self.world > 1:
            dist.all_reduce(y, group=self.group)
        return y


class TPDecoder:
    """Greedy decoding of a Llama checkpoint with this rank's shards only."""

    def __init__(self, checkpoint_dir: str, group: Any) -> None:
        from safetensors import safe_open

        cfg = read_config(checkpoint_dir)
        self.cfg = cfg
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        d = cfg["head_dim"]
        self.layers: list[tuple[Any, ...]] = []
        with safe_open(str(Path(checkpoint_dir) / "model.safetensors"), "pt") as f:
            def full(name: str) -> torch.Tensor:
                tensor: torch.Tensor = f.get_tensor(name).float()
                return tensor

            def rows(name: str, heads: list[int]) -> torch.Tensor:
                sl = f.get_slice(name)
                return torch.cat([sl[h * d:(h + 1) * d] for h in heads]).float()

            inter = _split(cfg["intermediate"], world, "intermediate_size")
            self.embed = full("model.embed_tokens.weight")
            self.norm = full("model.norm.weight")
            names = set(f.keys())
            self.head = full("lm_head.weight") if "lm_head.weight" in names else self.embed
            for i in range(cfg["layers"]):
                p = f"model.layers.{i}."
                plan = head_plan(cfg["heads"], cfg["kv_heads"], world, rank)
                attn = ParallelAttention.__new__(ParallelAttention)
                attn.group, attn.plan, attn.head_dim, attn.theta = group, plan, d, cfg["theta"]
                attn.world = world
                attn.q = rows(p + "self_attn.q_proj.weight", plan["q_heads"])
                attn.k = rows(p + "self_attn.k_proj.weight", plan["kv_heads"])
                attn.v = rows(p + "self_attn.v_proj.weight", plan["kv_heads"])
                g = cfg["heads"] // cfg["kv_heads"]
                attn.kv_of_q = [plan["kv_heads"].index(h // g) for h in plan["q_heads"]]
                o = f.get_slice(p + "self_attn.o_proj.weight")
                attn.o = torch.cat([o[:, h * d:(h + 1) * d] for h in plan["q_heads"]],
                                   dim=1).float()
                attn.cache_k = attn.cache_v = None
                mlp = ParallelMLP.__new__(ParallelMLP)
                mlp.gate = _shard_col(f.get_slice(p + "mlp.gate_proj.weight"), rank, inter, group)
                mlp.up = _shard_col(f.get_slice(p + "mlp.up_proj.weight"), rank, inter, group)
                down = RowParallelLinear.__new__(RowParallelLinear)
                down.group, down.world, down.rank, down.n = group, world, rank, inter
                down.weight = f.get_slice(p + "mlp.down_proj.weight")[
                    :, rank * inter:(rank + 1) * inter].float()
                down.bias, down.input_is_parallel = None, True
                mlp.down = down
                self.layers.append((full(p + "input_layernorm.weight"), attn,
                                    full(p + "post_attention_layernorm.weight"), mlp))
        self.length = 0

    def _forward(self, tokens: list[int]) -> int:
        eps = self.cfg["eps"]
        h = self.embed[torch.tensor(tokens)]
        positions = torch.arange(self.length, self.length + len(tokens))
        for ln1, attn, ln2, mlp in self.layers:
            h = h + attn.forward(rms_norm(h, ln1, eps), positions, use_cache=True)
            h = h + mlp.forward(rms_norm(h, ln2, eps))
        self.length += len(tokens)
        logits = rms_norm(h[-1], self.norm, eps) @ self.head.T
        return int(logits.argmax())

    def prefill(self, tokens: list[int]) -> int:
        return self._forward(list(tokens))

    def step(self, token: int) -> int:
        return self._forward([token])

    def kv_cache(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer this rank's keys and values, [local kv heads, tokens, head_dim]."""
        out = []
        for _, attn, _, _ in self.layers:
            assert attn.cache_k is not None and attn.cache_v is not None
            out.append((attn.cache_k.transpose(0, 1), attn.cache_v.transpose(0, 1)))
        return out


def _shard_col(sl: Any, rank: int, n: int, group: Any) -> ColumnParallelLinear:
    layer = ColumnParallelLinear.__new__(ColumnParallelLinear)
    layer.group, layer.world = group, dist.get_world_size(group)
    layer.weight = sl[rank * n:(rank + 1) * n].float()
    layer.bias, layer.gather_output = None, False
    return layer
