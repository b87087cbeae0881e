# ruff: noqa: E741  (m, l, acc: the running max, sum and accumulator, named as in FlashAttention)
"""The seeded inputs of `decode-attention`'s cases, built the same way in the learner's child
(drive.py) and in the grader (grading/, which computes the reference from them).

Everything is drawn on the CPU from a `torch.Generator` seeded by the case, then moved to the
device, so a `--seed` replay draws the same numbers on every machine. Cache slots no sequence
may read (past its length, in a partly filled last block, in blocks no table names, the
padding of the tables) hold NaN: a kernel that reads one returns NaN, which the grader names.
torch is imported lazily (the grader imports this module before it needs torch).
"""

from __future__ import annotations

from typing import Any

DTYPES = ("float32", "float16", "bfloat16")  # bfloat16: graded on CUDA only (drive.py)


def _torch() -> Any:
    import torch

    return torch


def dtype_of(name: str) -> Any:
    if name not in DTYPES:
        raise ValueError(f"decode-attention grades {', '.join(DTYPES)}, not {name!r}")
    return getattr(_torch(), name)


def _randn(g: Any, shape: tuple[int, ...], scale: float = 1.0) -> Any:
    return _torch().randn(shape, generator=g, dtype=_torch().float64) * scale


def softmax_inputs(p: dict[str, Any], device: str) -> dict[str, Any]:
    """x [rows, width] (a view with row stride `stride` when given), -inf where `neg_inf` says
    (a list of [row, first column]: that row is -inf from that column on)."""
    torch = _torch()
    g = torch.Generator().manual_seed(int(p["seed"]))
    rows, width = int(p["rows"]), int(p["width"])
    stride = int(p.get("stride", width))
    full = _randn(g, (rows, stride), float(p.get("scale", 1.0))) + float(p.get("shift", 0.0))
    for row, first in p.get("neg_inf", []):
        full[row, first:width] = float("-inf")
    full = full.to(dtype_of(p["dtype"])).to(device)
    return {"x": full[:, :width]}


def contiguous_inputs(p: dict[str, Any], device: str) -> dict[str, Any]:
    """q [B, H, D]; k, v [B, max_len, KVH, D] (NaN past each sequence's length); seq_lens int32."""
    torch = _torch()
    g = torch.Generator().manual_seed(int(p["seed"]))
    lens = [int(n) for n in p["lens"]]
    B, H, KVH, D = len(lens), int(p["heads"]), int(p["kv_heads"]), int(p["head_dim"])
    max_len = int(p.get("max_len", max(lens)))
    dt = dtype_of(p["dtype"])
    q = _randn(g, (B, H, D), float(p.get("q_scale", 1.0)))
    k = _randn(g, (B, max_len, KVH, D))
    v = _randn(g, (B, max_len, KVH, D))
    for b, n in enumerate(lens):
        k[b, n:] = float("nan")
        v[b, n:] = float("nan")
    return {"q": q.to(dt).to(device), "k": k.to(dt).to(device), "v": v.to(dt).to(device),
            "seq_lens": torch.tensor(lens, dtype=torch.int32, device=device),
            "scale": float(D) ** -0.5}


def paged_inputs(p: dict[str, Any], device: str) -> dict[str, Any]:
    """q [B, H, D]; k_cache, v_cache [num_blocks, block_size, KVH, D] with NaN in every slot no
    table reaches below its sequence's length; block_tables int32 [B, width] padded with
    `pad` (default: the last block, which no sequence uses); context_lens int32."""
    torch = _torch()
    g = torch.Generator().manual_seed(int(p["seed"]))
    tables = [[int(b) for b in row] for row in p["tables"]]
    lens = [int(n) for n in p["lens"]]
    bs, nb = int(p["block_size"]), int(p["num_blocks"])
    B, H, KVH, D = len(lens), int(p["heads"]), int(p["kv_heads"]), int(p["head_dim"])
    dt = dtype_of(p["dtype"])
    q = _randn(g, (B, H, D), float(p.get("q_scale", 1.0)))
    k = _randn(g, (nb, bs, KVH, D))
    v = _randn(g, (nb, bs, KVH, D))
    live = torch.zeros((nb, bs), dtype=torch.bool)
    for row, n in zip(tables, lens, strict=True):
        for t in range(n):
            live[row[t // bs], t % bs] = True
    k[~live] = float("nan")
    v[~live] = float("nan")
    width = max(len(r) for r in tables) + int(p.get("extra_width", 0))
    pad = int(p.get("pad", nb - 1))
    padded = [row + [pad] * (width - len(row)) for row in tables]
    return {"q": q.to(dt).to(device), "k_cache": k.to(dt).to(device),
            "v_cache": v.to(dt).to(device),
            "block_tables": torch.tensor(padded, dtype=torch.int32, device=device),
            "context_lens": torch.tensor(lens, dtype=torch.int32, device=device),
            "scale": float(D) ** -0.5}


def partials_inputs(p: dict[str, Any], device: str) -> dict[str, Any]:
    """Split partials for `combine` alone: m [B, H, S] (-inf for the splits `empty` names, else
    `offset` + a draw scaled by `spread`), l [B, H, S] (0 when empty), acc [B, H, S, D] (0 when
    empty), fp32; out dtype `dtype`."""
    torch = _torch()
    g = torch.Generator().manual_seed(int(p["seed"]))
    B, H, S, D = int(p["batch"]), int(p["heads"]), int(p["splits"]), int(p["head_dim"])
    m = _randn(g, (B, H, S), float(p.get("spread", 1.0))) + float(p.get("offset", 0.0))
    l = torch.rand((B, H, S), generator=g, dtype=torch.float64) * 8 + 1
    acc = _randn(g, (B, H, S, D)) * l[..., None]
    for b, h, s in p.get("empty", []):
        m[b, h, s] = float("-inf")
        l[b, h, s] = 0.0
        acc[b, h, s] = 0.0
    f = torch.float32
    return {"m": m.to(f).to(device), "l": l.to(f).to(device), "acc": acc.to(f).to(device),
            "dtype": dtype_of(p["dtype"])}


def split_tokens(lens: list[int], block_size: int, num_splits: int) -> int:
    """Tokens per split (whole blocks): the longest sequence's blocks over num_splits."""
    longest_blocks = -(-max(lens) // block_size)
    return -(-longest_blocks // num_splits) * block_size
