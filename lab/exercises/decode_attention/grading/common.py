"""What decode-attention's levels share: the tolerances per dtype, the float64 torch answers
(computed here from the case's inputs, never through the learner's launch code), and the
comparison every output ends in, which names a known mistake when the output matches one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lab.grader.api import Case, Verdict

REFERENCE = "lab.reference.decode_attention"

# |got - expected| <= ATOL + RTOL * |expected|, per element, expected in float64. fp16 outputs
# carry the output's own rounding (2^-11 relative) plus fp16 inputs' products accumulated in fp32.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-4),
    "float16": (2e-3, 5e-3),
    "bfloat16": (2e-2, 2e-2),
}

Variants = Callable[[], dict[str, Any]]


def tolerance(dtype: str) -> tuple[float, float]:
    return TOLERANCES[dtype]


def attend(q: Any, keys: list[Any], values: list[Any], scale: float, *,
           dtype: Any = None, tiled_heads: bool = False) -> Any:
    """softmax(q k^T * scale) v per sequence (float64 unless `dtype`), on q's device: q [B, H, D];
    keys[b], values[b] [n_b, KVH, D]; query head h reads KV head h // (H // KVH)
    (`tiled_heads`: h % KVH, a known mistake)."""
    import torch

    dtype = dtype or torch.float64
    B, H, D = q.shape
    out = torch.empty((B, H, D), dtype=dtype, device=q.device)
    for b in range(B):
        group = H // keys[b].shape[1]
        k, v = keys[b].to(dtype), values[b].to(dtype)
        if tiled_heads:
            k, v = k.repeat(1, group, 1), v.repeat(1, group, 1)
        else:  # [n, H, D]
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,thd->ht", q[b].to(dtype), k) * scale
        out[b] = torch.einsum("ht,thd->hd", torch.softmax(scores, dim=-1), v)
    return out


def online(q: Any, keys: list[Any], values: list[Any], scale: float, block: int, *,
           rescale_acc: bool = True, rescale_sum: bool = True) -> Any:
    """An online softmax over tiles of `block` tokens in float64, with a known mistake switched
    on: the accumulator (or the running sum) not rescaled when the running max grows."""
    import torch

    B, H, D = q.shape
    out = torch.empty((B, H, D), dtype=torch.float64)
    for b in range(B):
        group = H // keys[b].shape[1]
        k = keys[b].double().repeat_interleave(group, dim=1)
        v = values[b].double().repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,thd->ht", q[b].double(), k) * scale  # [H, n]
        m = torch.full((H,), float("-inf"), dtype=torch.float64)
        s = torch.zeros(H, dtype=torch.float64)
        acc = torch.zeros((H, D), dtype=torch.float64)
        for start in range(0, scores.shape[1], block):
            tile = scores[:, start:start + block]
            m_new = torch.maximum(m, tile.max(dim=1).values)
            alpha = torch.exp(m - m_new)
            p = torch.exp(tile - m_new[:, None])
            s = (s * alpha if rescale_sum else s) + p.sum(dim=1)
            pv = torch.einsum("ht,thd->hd", p, v[start:start + block])
            acc = (acc * alpha[:, None] if rescale_acc else acc) + pv
            m = m_new
        out[b] = acc / s[:, None]
    return out


def paged_tokens(x: dict[str, Any], which: str) -> list[Any]:
    """Each sequence's K (or V) in token order, read through its block table: [n_b, KVH, D]."""
    cache = x[which]
    bs = cache.shape[1]
    out = []
    for row, n in zip(x["block_tables"].tolist(), x["context_lens"].tolist(), strict=True):
        blocks = row[:-(-n // bs)]
        out.append(cache[blocks].flatten(0, 1)[:n])
    return out


def describe_case(case: Case) -> str:
    return f"case {case.id} ({case.description})" if case.description else f"case {case.id}"


def check_tensor(case: Case, got: Any, expected: Any, *, what: str, dtype: str,
                 variants: Variants | None = None, nan_hint: str = "") -> Verdict:
    """got (the learner's tensor) against expected (float64): type, shape, dtype, finiteness,
    then the tolerance; a miss is matched against `variants` (name -> the output a known
    mistake gives) and the message names the one it fits."""
    import torch

    if not isinstance(got, torch.Tensor):
        return Verdict(False, f"{what} returned {_kind(got)}, not a torch.Tensor")
    if tuple(got.shape) != tuple(expected.shape):
        return Verdict(False, f"{what} returned shape {tuple(got.shape)}, expected "
                              f"{tuple(expected.shape)}")
    if str(got.dtype).removeprefix("torch.") != dtype:
        return Verdict(False, f"{what} returned {str(got.dtype).removeprefix('torch.')} for "
                              f"{dtype} input: store the result in the input's dtype "
                              "(compute in fp32, convert when storing)")
    value = got.double()
    bad = ~torch.isfinite(value) & torch.isfinite(expected)
    if bad.any():
        where = _where(bad)
        return Verdict(False, f"{what} returned NaN or inf at {where} where the answer is "
                              f"finite — {nan_hint or 'check the masks and the max subtraction'}"
                              f" [{describe_case(case)}]")
    atol, rtol = tolerance(dtype)
    excess = (value - expected).abs() - (atol + rtol * expected.abs())
    excess = torch.where(torch.isfinite(expected), excess, torch.zeros_like(excess))
    if (excess <= 0).all():
        return Verdict(True)
    err = (value - expected).abs().nan_to_num(0.0)
    worst = _where(excess > 0)
    why = _matching_variant(value, expected, variants, atol, rtol) if variants else ""
    return Verdict(False, f"{what} differs from the float64 torch answer by up to "
                          f"{err.max().item():.3g} (tolerance {atol:g} + {rtol:g}·|expected| "
                          f"for {dtype}) at {worst}"
                   + (f" — looks like: {why}" if why else "") + f" [{describe_case(case)}]")


def _matching_variant(value: Any, expected: Any, variants: Variants, atol: float,
                      rtol: float) -> str:
    import torch

    for name, wrong in variants().items():
        if wrong is None or tuple(wrong.shape) != tuple(value.shape):
            continue
        near = (value - wrong).abs() <= atol + rtol * wrong.abs()
        both_nan = torch.isnan(value) & torch.isnan(wrong)
        if bool((near | both_nan).all()):
            return name
    return ""


def _where(mask: Any) -> str:
    total = int(mask.sum())
    if not total:
        return "no index"
    first = tuple(int(i) for i in mask.nonzero()[0].tolist())
    return f"index {first}" + (f" and {total - 1} more" if total > 1 else "")


def _kind(value: Any) -> str:
    if isinstance(value, dict) and "not_a_tensor" in value:
        return str(value["not_a_tensor"])
    return type(value).__name__


def answered(case: Case, got: Any, what: str) -> Verdict | None:
    """The drive's own reports: inputs changed, bf16 refused / speed skipped (a pass with the
    reason shown), or no answer; None when there is an output to check."""
    if not isinstance(got, dict):
        return Verdict(False, f"internal: {what} came back as {type(got).__name__}")
    if "refused" in got:
        return Verdict(True, str(got["refused"]))
    if "changed_inputs" in got:
        return Verdict(False, f"{what} changed its input(s) {', '.join(got['changed_inputs'])}: "
                              "a launcher must leave q, the caches, the tables and the lengths "
                              f"as it found them (write only the output) [{describe_case(case)}]")
    return None
