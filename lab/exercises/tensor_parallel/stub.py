"""tensor-parallel: shard layers across W processes (see `dojo lab show tensor-parallel`).

Edit the bodies below, then run `dojo lab grade tensor-parallel --level 1` (or `dojo lab watch
tensor-parallel`). The grader starts W processes (ranks), joins them to a process group and
constructs your classes in each rank with that `group`: use dist.get_rank(group),
dist.get_world_size(group) and pass group=group to every collective.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F

from lab.exercises.tensor_parallel.runtime import read_config, rms_norm, rope  # noqa: F401


# ---- level 1 ---------------------------------------------------------------------------------

class ColumnParallelLinear:
    """y = x W^T + b, W [out, in] split by output rows: rank r keeps rows
    [r*out/W, (r+1)*out/W) in self.weight (and that slice of the bias in self.bias, or None).
    forward(x [rows, in]) -> [rows, out] if gather_output else this rank's [rows, out/W].
    out not divisible by W -> ValueError naming both sizes."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, group: Any,
                 gather_output: bool = True) -> None:
        raise NotImplementedError("ColumnParallelLinear.__init__")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("ColumnParallelLinear.forward")


class RowParallelLinear:
    """y = x W^T + b, W [out, in] split by input columns: rank r keeps columns
    [r*in/W, (r+1)*in/W) in self.weight; self.bias is the full bias (or None), added once.
    forward(x) takes this rank's slice [rows, in/W] (input_is_parallel) or the full [rows, in],
    and returns the full [rows, out] on every rank. in not divisible by W -> ValueError."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, group: Any,
                 input_is_parallel: bool = True) -> None:
        raise NotImplementedError("RowParallelLinear.__init__")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("RowParallelLinear.forward")


# ---- level 2 ---------------------------------------------------------------------------------

class ParallelMLP:
    """down(silu(gate(x)) * up(x)) with gate/up [inter, hidden], down [hidden, inter]:
    exactly one all-reduce per forward. forward(x [rows, hidden]) -> [rows, hidden]."""

    def __init__(self, gate_weight: torch.Tensor, up_weight: torch.Tensor,
                 down_weight: torch.Tensor, group: Any) -> None:
        raise NotImplementedError("ParallelMLP.__init__")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("ParallelMLP.forward")


def head_plan(num_heads: int, num_kv_heads: int, world_size: int, rank: int) -> dict[str, Any]:
    """{"q_heads": [...], "kv_heads": [...], "replicated": bool, "note": str} for this rank;
    ValueError when the query heads do not split over the ranks."""
    raise NotImplementedError("head_plan")


class ParallelAttention:
    """Causal self-attention with this rank's query heads (and the KV heads they read);
    q/k/v weights [heads*head_dim, hidden], o [hidden, heads*head_dim].
    forward(x [tokens, hidden], positions [tokens]) -> [tokens, hidden], one all-reduce."""

    def __init__(self, q_weight: torch.Tensor, k_weight: torch.Tensor, v_weight: torch.Tensor,
                 o_weight: torch.Tensor, num_heads: int, num_kv_heads: int, group: Any,
                 rope_theta: float = 10000.0) -> None:
        raise NotImplementedError("ParallelAttention.__init__")

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("ParallelAttention.forward")


# ---- level 3 ---------------------------------------------------------------------------------

class TPDecoder:
    """Greedy decoding of a Llama checkpoint folder (config.json, model.safetensors) with this
    rank's shards only (read them with safetensors' safe_open(...).get_slice)."""

    def __init__(self, checkpoint_dir: str, group: Any) -> None:
        raise NotImplementedError("TPDecoder.__init__")

    def prefill(self, tokens: list[int]) -> int:
        """Run the prompt, cache its keys/values, return the greedy next token."""
        raise NotImplementedError("TPDecoder.prefill")

    def step(self, token: int) -> int:
        """Feed one token at the next position, return the greedy next token."""
        raise NotImplementedError("TPDecoder.step")

    def kv_cache(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per layer (keys, values) this rank holds: [its kv heads, tokens, head_dim], keys
        after RoPE."""
        raise NotImplementedError("TPDecoder.kv_cache")
