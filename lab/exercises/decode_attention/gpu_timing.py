"""decode-attention's speed case, on CUDA only: the learner's launcher, a plain torch decode and a
device-to-device copy of the same size, each timed the way the platform times a CUDA case
(lab.grader.gpu_timing: warm-up calls, the L2 flushed before every timed call, CUDA events, a
standard-error stop rule), all three in the same run.

Returns raw samples (milliseconds per call) and byte counts; the grader turns them into the two
ratios it reports: time against torch's, and the bandwidth roofline's share (KV bytes read per
call / the copy bandwidth measured in the same run, over the learner's time). The inputs are
drawn on the device from a CUDA generator seeded by the case, so the grader draws the same ones
to check the output. Imported in the child (drive.CHILD_MODULES) and by the grader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

WARMUP = 3
MAX_CALLS = 200  # the platform's stop rule usually ends sooner (1% standard error, 1 s)
FUNCTIONS = {"attention": "decode_attention", "paged": "paged_decode_attention",
             "flash": "flash_decode"}


def speed_inputs(p: dict[str, Any], device: str = "cuda") -> dict[str, Any]:
    """The speed case's inputs on `device`: fp16, lengths and (paged) a shuffled pool drawn from
    a generator seeded with p["seed"]."""
    import torch

    g = torch.Generator(device=device).manual_seed(int(p["seed"]))
    B, H, KVH, D = int(p["batch"]), int(p["heads"]), int(p["kv_heads"]), int(p["head_dim"])
    lo, hi = int(p["min_len"]), int(p["max_len"])
    dt = getattr(torch, p["dtype"])
    lens = torch.randint(lo, hi + 1, (B,), generator=g, device=device, dtype=torch.int32)
    q = torch.randn((B, H, D), generator=g, device=device, dtype=dt)
    out: dict[str, Any] = {"q": q, "scale": float(D) ** -0.5}
    if p["layout"] == "contiguous":
        out["k"] = torch.randn((B, hi, KVH, D), generator=g, device=device, dtype=dt)
        out["v"] = torch.randn((B, hi, KVH, D), generator=g, device=device, dtype=dt)
        out["seq_lens"] = lens
        return out
    bs = int(p["block_size"])
    width = -(-hi // bs)
    nb = B * width
    out["k_cache"] = torch.randn((nb, bs, KVH, D), generator=g, device=device, dtype=dt)
    out["v_cache"] = torch.randn((nb, bs, KVH, D), generator=g, device=device, dtype=dt)
    perm = torch.randperm(nb, generator=g, device=device)
    out["block_tables"] = perm.reshape(B, width).to(torch.int32)
    out["context_lens"] = lens
    if p["layout"] == "split":
        out["num_splits"] = int(p["num_splits"])
    return out


def kv_bytes(args: dict[str, Any]) -> int:
    """K and V bytes a decode call must read: every valid token of every sequence, once."""
    contiguous = "k" in args
    lens = args["seq_lens"] if contiguous else args["context_lens"]
    cache = args["k"] if contiguous else args["k_cache"]
    per_token = int(cache.shape[-2] * cache.shape[-1] * cache.element_size())
    return 2 * int(lens.sum()) * per_token


def call_args(p: dict[str, Any], args: dict[str, Any]) -> list[Any]:
    if p["layout"] == "contiguous":
        return [args[k] for k in ("q", "k", "v", "seq_lens", "scale")]
    names = ["q", "k_cache", "v_cache", "block_tables", "context_lens", "scale"]
    return [args[k] for k in names] + ([args["num_splits"]] if p["layout"] == "split" else [])


def torch_decode(args: dict[str, Any]) -> Any:
    """Plain torch decode attention (the timing's baseline; the grader's answer is computed
    elsewhere): the paged pool gathered through the tables, then SDPA with a length mask."""
    import torch

    q = args["q"]
    if "k" in args:
        k, v, lens = args["k"], args["v"], args["seq_lens"]
    else:
        tables = args["block_tables"].long()
        k = args["k_cache"][tables].flatten(1, 2)
        v = args["v_cache"][tables].flatten(1, 2)
        lens = args["context_lens"]
    mask = torch.arange(k.shape[1], device=q.device)[None, :] < lens[:, None]
    out = torch.nn.functional.scaled_dot_product_attention(
        q[:, :, None], k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask[:, None, None, :],
        scale=args["scale"], enable_gqa=True)
    return out[:, :, 0]


def time_ms(fn: Callable[[], Any], flush: Any, clock: Any = None) -> list[float]:
    """Milliseconds per call, timed as the platform times a CUDA case (lab.grader.gpu_timing:
    WARMUP discarded calls, the L2 flushed before each timed call, CUDA events after a
    synchronise, repeated until the standard error is under 1% of the mean or 1 s is spent)."""
    from lab.grader import gpu_timing as platform

    timed = platform.timed_calls(lambda _seed: fn(), list(range(WARMUP + MAX_CALLS)), WARMUP,
                                 clock or platform.CudaClock(), flush, platform.StopRule())
    return [t * 1e3 for t in timed.times]


def measure(solution: Any, p: dict[str, Any], device: str = "cuda") -> dict[str, Any]:
    """The learner's output (checked by the grader) and the three timings, raw. On "cpu" (the
    tests: the platform's CPU stand-in clock) the figures mean nothing; the drive never asks."""
    import torch

    from lab.grader import gpu_timing as platform

    args = speed_inputs(p, device)
    fn = getattr(solution, FUNCTIONS[p["level_kind"]])
    call = call_args(p, args)
    clock = platform.CudaClock() if device == "cuda" else platform.CpuClock()
    out = fn(*call)
    clock.synchronize()
    flush = platform.L2Flush(device, platform.flush_bytes(device))
    learner = time_ms(lambda: fn(*call), flush, clock)
    baseline = time_ms(lambda: torch_decode(args), flush, clock)
    nbytes = kv_bytes(args)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy = time_ms(lambda: dst.copy_(src), flush, clock)
    return {"out": out.detach().cpu() if isinstance(out, torch.Tensor) else None,
            "learner_ms": learner, "torch_ms": baseline, "copy_ms": copy,
            "kv_bytes": nbytes, "copy_bytes": 2 * nbytes}
