"""decode-attention's speed case, on CUDA only: the learner's launcher, a plain torch decode and a
device-to-device copy of the same size, each timed the way the platform times a CUDA case
(lab.grader.gpu_timing: warm-up calls, the L2 flushed before every timed call, CUDA events, a
standard-error stop rule), all three in the same run.

Returns raw samples (milliseconds per call) and byte counts; the grader turns them into the two
ratios it reports: time against torch's, and the bandwidth roofline's share (KV bytes read per
call / the copy bandwidth measured in the same run, over the learner's time). The caches are
drawn on the device from a generator seeded by the case; every call, warm-up included, has its
own query, drawn from a seed of its own (from the OS) before the timing starts, so no call
repeats another's question. There is no separate untimed call: the learner's timed outputs come
back with their seeds, and the grader checks a random subset of them against answers it draws
for the same seeds (`grading/speed.py`). Imported in the child (drive.CHILD_MODULES) and by the
grader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

WARMUP = 3
MAX_CALLS = 200  # the platform's stop rule usually ends sooner (1% standard error, 1 s)
FUNCTIONS = {"attention": "decode_attention", "paged": "paged_decode_attention",
             "flash": "flash_decode"}


def speed_inputs(p: dict[str, Any], device: str = "cuda",
                 query_seed: int | None = None) -> dict[str, Any]:
    """The speed case's inputs on `device`: fp16, lengths and (paged) a shuffled pool drawn from
    a generator seeded with p["seed"]; with `query_seed`, q drawn from its own generator (one
    call's question: `query`)."""
    import torch

    g = torch.Generator(device=device).manual_seed(int(p["seed"]))
    B, H, KVH, D = int(p["batch"]), int(p["heads"]), int(p["kv_heads"]), int(p["head_dim"])
    lo, hi = int(p["min_len"]), int(p["max_len"])
    dt = getattr(torch, p["dtype"])
    lens = torch.randint(lo, hi + 1, (B,), generator=g, device=device, dtype=torch.int32)
    q = torch.randn((B, H, D), generator=g, device=device, dtype=dt)
    if query_seed is not None:
        q = query(p, device, query_seed)
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


def query(p: dict[str, Any], device: str, seed: int) -> Any:
    """One timed call's q [B, H, D], drawn on `device` from a generator seeded with `seed`."""
    import torch

    g = torch.Generator(device=device).manual_seed(int(seed))
    shape = (int(p["batch"]), int(p["heads"]), int(p["head_dim"]))
    return torch.randn(shape, generator=g, device=device, dtype=getattr(torch, p["dtype"]))


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


def timed(call: Callable[[int], Any], seeds: list[int], flush: Any, clock: Any = None) -> Any:
    """`call(seed)` timed as the platform times a CUDA case, through its one driver
    (lab.grader.gpu_timing.timed_calls: WARMUP discarded calls, the L2 flushed before each timed
    call, CUDA events after a synchronise, repeated until the standard error is under 1% of the
    mean or 1 s is spent): the `Timed` record, milliseconds in `ms`."""
    from lab.grader import gpu_timing as platform

    return platform.timed_calls(call, seeds, WARMUP, clock or platform.CudaClock(), flush,
                                platform.StopRule())


def _ms(record: Any) -> list[float]:
    return [t * 1e3 for t in record.times]


def measure(solution: Any, p: dict[str, Any], device: str = "cuda") -> dict[str, Any]:
    """The learner's timed outputs with their query seeds (checked by the grader) and the three
    timings, raw. Every call of the learner's launcher is a timed call (the platform's driver:
    the same frames), each on its own query. On "cpu" (the tests: the platform's CPU stand-in
    clock) the figures mean nothing; the drive never asks."""
    import secrets

    import torch

    from lab.grader import gpu_timing as platform

    args = speed_inputs(p, device)
    fn = getattr(solution, FUNCTIONS[p["level_kind"]])
    seeds = [secrets.randbits(31) for _ in range(WARMUP + MAX_CALLS)]
    questions = {s: {**args, "q": query(p, device, s)} for s in seeds}
    calls = {s: call_args(p, a) for s, a in questions.items()}
    clock = platform.CudaClock() if device == "cuda" else platform.CpuClock()
    flush = platform.L2Flush(device, platform.flush_bytes(device))
    learner = timed(lambda s: fn(*calls[s]), seeds, flush, clock)
    baseline = timed(lambda s: torch_decode(questions[s]), seeds, flush, clock)
    nbytes = kv_bytes(args)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy = timed(lambda _s: dst.copy_(src), seeds, flush, clock)
    return {"outs": _outputs(learner.values), "seeds": learner.seeds, "learner_ms": _ms(learner),
            "torch_ms": _ms(baseline), "copy_ms": _ms(copy), "kv_bytes": nbytes,
            "copy_bytes": 2 * nbytes}


def _outputs(values: list[Any]) -> list[Any]:
    """The learner's outputs for the grader, on the CPU: a tensor whose storage a later call
    wrote again (a reused output buffer) only for the last call that wrote it (None for the
    earlier ones: their values are gone); anything else named by its type."""
    import torch

    last = {out.untyped_storage().data_ptr(): i for i, out in enumerate(values)
            if isinstance(out, torch.Tensor)}
    kept = set(last.values())
    return [(out.detach().cpu() if i in kept else None) if isinstance(out, torch.Tensor)
            else f"a {type(out).__name__}" for i, out in enumerate(values)]
