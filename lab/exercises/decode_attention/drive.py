"""decode-attention, child side: call the learner's Triton launchers on a case's inputs and return
what they returned, raw.

Runs in the learner's sandbox. On a CPU the kernels run under Triton's interpreter
(`TRITON_INTERPRET=1`, set here before the learner's file imports triton: the grader starts the
child with `DOJO_LAB_DEVICE`); Triton's cache and compiled files go to a private temporary folder
(the sandbox's own tmp). Every input is cloned before the call and compared bit for bit after it,
so a launcher that writes into q, the caches or the tables is reported, not graded on. bfloat16 is
refused under the interpreter (it computes 1 + 1 = 1.7e38 there without an error). The speed case
(`kind = "speed"`) times on CUDA only (gpu_timing.py); on a CPU it says so and returns no figures.
No verdict is computed here: grading/ rebuilds the inputs in the grader and judges there.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

from lab.exercises.decode_attention import gpu_timing, inputs
from lab.grader import scratch
from lab.grader.api import DEVICE_VAR, Case, RunContext

CHILD_MODULES = ("lab.exercises.decode_attention.inputs",
                 "lab.exercises.decode_attention.gpu_timing", "lab.grader.gpu_timing",
                 "lab.grader.scratch")

INTERPRETED = os.environ.get(DEVICE_VAR, "cpu") != "cuda"
if INTERPRETED:  # before the learner's file imports triton
    os.environ["TRITON_INTERPRET"] = "1"
# named for this process and removed at its exit (the grader imports this module too: each
# grading left an empty dojo-triton-* folder in /tmp); a killed one's is swept by the next
os.environ["TRITON_CACHE_DIR"] = scratch.make("dojo-triton-")

BF16_REFUSED = ("bfloat16 is not graded under Triton's interpreter: it computes bf16 silently "
                "wrong there (1 + 1 is stored as 1.7e38, no error); bf16 is graded on CUDA")
SPEED_NEEDS_GPU = ("the speed part needs a GPU: under Triton's interpreter a kernel's time "
                   "means nothing (grade with --device cuda on a machine with one)")


def warm(device: str) -> None:
    """Import torch and triton ahead of a grading (a prepared child): seconds not paid on g."""
    import torch  # noqa: F401
    import triton  # noqa: F401


def run(solution: ModuleType, case: Case, ctx: RunContext) -> Any:
    p = case.params
    kind = p["kind"]
    if p.get("dtype") == "bfloat16" and INTERPRETED:
        return {"refused": BF16_REFUSED}
    if kind == "speed":
        if ctx.device != "cuda":
            return {"refused": SPEED_NEEDS_GPU}
        return gpu_timing.measure(solution, p)
    if kind == "softmax":
        args = inputs.softmax_inputs(p, ctx.device)
        return _call(solution.softmax, args, ("x",))
    if kind == "attention":
        args = inputs.contiguous_inputs(p, ctx.device)
        return _call(solution.decode_attention, args, ("q", "k", "v", "seq_lens", "scale"))
    if kind == "paged":
        args = inputs.paged_inputs(p, ctx.device)
        return _call(solution.paged_decode_attention, args, _PAGED)
    if kind == "partials":
        args = {**inputs.paged_inputs(p, ctx.device), "num_splits": int(p["num_splits"])}
        return _call(solution.split_partials, args, (*_PAGED, "num_splits"))
    if kind == "combine":
        args = inputs.partials_inputs(p, ctx.device)
        return _call(solution.combine, args, ("m", "l", "acc", "dtype"))
    if kind == "flash":
        base = inputs.paged_inputs(p, ctx.device)
        outs = {}
        for splits in p["num_splits"]:
            got = _call(solution.flash_decode, {**base, "num_splits": int(splits)},
                        (*_PAGED, "num_splits"))
            if "out" not in got:
                return {**got, "num_splits": int(splits)}
            outs[str(splits)] = got["out"]
        return {"outs": outs}
    raise ValueError(f"unknown case kind {kind!r}")


_PAGED = ("q", "k_cache", "v_cache", "block_tables", "context_lens", "scale")


def _call(fn: Any, args: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """fn(*args in order) on the inputs; the inputs compared bit for bit afterwards."""
    import torch

    before = {k: v.clone() for k, v in args.items() if isinstance(v, torch.Tensor)}
    out = fn(*(args[k] for k in order))
    changed = [k for k, v in before.items() if not _same_bits(v, args[k])]
    if changed:
        return {"changed_inputs": changed}
    return {"out": _plain(out)}


def _same_bits(a: Any, b: Any) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point:  # NaN slots must stay NaN: compare the bits
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return bool(torch.equal(a.contiguous().view(bits), b.contiguous().view(bits)))
    return bool(torch.equal(a, b))


def _plain(out: Any) -> Any:
    """Tensors (or a tuple of them) as they came back, on the CPU; anything else by its type."""
    import torch

    if isinstance(out, torch.Tensor):
        return out.detach().cpu()
    if isinstance(out, tuple | list):
        return [_plain(x) for x in out]
    return {"not_a_tensor": type(out).__name__}
