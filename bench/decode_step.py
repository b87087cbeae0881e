"""One decode step of the shipped target against the memory-bandwidth limit.

    python bench/decode_step.py [--device cpu|cuda] [--batches 1,8,16] [--context 64]
                                [--threads 1] [--rounds 30] [--no-compile] [--no-native]
                                [--no-graphs]

A decode step reads every weight once and each row's cached keys and values once, and does
little arithmetic per byte: its floor is (weight bytes + KV bytes read) / memory bandwidth. The
bandwidth is measured in the same run, interleaved with the steps, on the step's own threads: a
256 MiB tensor copy (`dst.copy_(src)`), counted as 2 x 256 MiB moved (read + write, STREAM's
convention). Prints, for each batch size B, what it counted (weight bytes, KV bytes), the
step's milliseconds (wall and CPU on a CPU), the limit's, and step / limit beside the target
(<= 2x); beside it the compute floor (the step's FLOPs / the FLOP/s of a 512 x 512 matmul timed
in the same run, on the step's threads) and step / the larger floor (the roofline): where the
compute floor is the larger one, the bandwidth ratio overstates the gap.

The steps timed, each from the same prefilled cache (every call writes the same column):
`LeanLlama.step` (the model's arithmetic, eager), the reference engine's `HFStepModel.forward`
around it (mask and cache bookkeeping included), the static step (`lab.models.static_step`:
fixed shapes, KV of fixed capacity = context + 1 columns written in place, a per-row length
mask) eager and compiled by inductor (`lab.models.decode_runner`: 1-3 rows ahead of time with
AOTInductor, 4+ through torch.compile; one build per B, its time printed; without a C++
compiler the reason is printed and the row left out), and the C step (`lab.models.native_step`:
one C function built at run time, its own 8-row matmul tile; always one thread);
beside them, the step's matmuls alone on inputs of the same shapes (the BLAS's floor: what the
step costs with no per-operation overhead around them), the same matmuls through the C step's
tile (so the C step minus them is what its norms, rotary, attention and KV write cost), and the
same weight matrices merely summed (the core's read floor: the weights' bytes read once, with
no matmul; it reads no KV).

On CUDA: synchronised, timed with CUDA events; the static step eager and replayed from a CUDA
graph captured per batch size (with and without; --no-graphs skips the capture), no compile. On
a CPU, the ratio from CPU time is the one to read on a loaded machine (another process's burst
inflates wall time, not CPU time; with N threads the copy's CPU time is summed over the same N
threads as the step's); the weights (27.8 MB) fit in a large L3, so the true gap to DRAM
bandwidth is wider than printed. Run it with `nice` on a shared CPU and compare ratios within
one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.models.decode_runner import DecodeRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

COPY_BYTES = 256 * 2**20  # the copied tensor; a copy moves twice this (read + write)
TARGET_RATIO = 2.0  # a decode step within 2x the bandwidth limit


@dataclass(frozen=True)
class StepCost:
    """Bytes one decode step reads: weights (every matrix and norm once, the head once, and the
    B embedding rows gathered) and the KV cache (each row's keys and values over its `context`
    cached columns plus the new one, every layer); and its FLOPs (2 per weight of every matrix
    per row, and the attention's two products over the columns)."""

    weights: int
    kv: int
    flops: int

    @property
    def total(self) -> int:
        return self.weights + self.kv


def _field(config: Any, name: str) -> int:
    value = getattr(config, name, None)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"config.{name} must be a positive int to count a Llama's bytes, "
                         f"got {value!r}")
    return value


def step_cost(config: Any, batch: int, context: int, dtype_bytes: int) -> StepCost:
    """What one decode step of a Llama `config` reads at batch `batch` after `context` cached
    columns, with `dtype_bytes` per element (4 for fp32). The head counts once whether or not it
    is tied to the embedding (tied, the embedding rows gathered are read a second time)."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if context < 0:
        raise ValueError(f"context must be >= 0 cached columns, got {context}")
    if dtype_bytes not in (1, 2, 4, 8):
        raise ValueError(f"dtype_bytes must be 1, 2, 4 or 8, got {dtype_bytes}")
    hidden, inter = _field(config, "hidden_size"), _field(config, "intermediate_size")
    layers, vocab = _field(config, "num_hidden_layers"), _field(config, "vocab_size")
    heads, kv_heads = _field(config, "num_attention_heads"), _field(config, "num_key_value_heads")
    if getattr(config, "head_dim", None) is not None:
        head_dim = _field(config, "head_dim")
    elif hidden % heads:
        raise ValueError(f"no head_dim and hidden_size {hidden} is not a multiple of "
                         f"num_attention_heads {heads}")
    else:
        head_dim = hidden // heads
    attention = hidden * head_dim * (2 * heads + 2 * kv_heads)  # q and o, k and v
    mlp = 3 * hidden * inter  # gate, up, down
    per_layer = attention + mlp + 2 * hidden  # and two RMSNorm weights
    # the layers, the final norm, the head, the B embedding rows gathered
    elements = layers * per_layer + hidden + vocab * hidden + batch * hidden
    kv = batch * layers * 2 * kv_heads * head_dim * (context + 1)
    matrices = layers * (attention + mlp) + vocab * hidden
    scores = layers * heads * head_dim * (context + 1)  # q.k, then p.v: as many each
    flops = 2 * batch * (matrices + 2 * scores)
    return StepCost(elements * dtype_bytes, kv * dtype_bytes, flops)


@dataclass
class Timing:
    """Per-call samples in milliseconds: wall, and CPU (process time; None on CUDA)."""

    wall: list[float]
    cpu: list[float]

    def best(self, cpu: bool = False) -> float:
        return min(self.cpu if cpu else self.wall)

    def median(self, cpu: bool = False) -> float:
        return statistics.median(self.cpu if cpu else self.wall)


class Clock:
    """Times a call: perf_counter and process_time on a CPU; CUDA events, synchronised, on a
    GPU (CPU time is then not the step's cost and is not recorded)."""

    def __init__(self, device: str) -> None:
        self.cuda = device.startswith("cuda")

    def time(self, fn: Callable[[], Any], into: Timing) -> None:
        import torch

        if self.cuda:
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            end.synchronize()
            into.wall.append(float(start.elapsed_time(end)))
            return
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        into.cpu.append((time.process_time() - cpu) * 1e3)
        into.wall.append((time.perf_counter() - wall) * 1e3)


MATMUL_N = 512  # the FLOP/s probe: an n x n by n x n fp32 matmul, 2 n^3 FLOPs


def matmuler(device: str) -> Callable[[], Any]:
    """A square fp32 matmul on `device` (on the step's threads): its FLOP/s is the compute
    floor's, as the copy's bandwidth is the memory floor's."""
    import torch

    a = torch.rand((MATMUL_N, MATMUL_N), device=device)
    b = torch.rand((MATMUL_N, MATMUL_N), device=device)
    return lambda: torch.matmul(a, b)


def copier(device: str) -> Callable[[], Any]:
    """A 256 MiB copy on `device` (on a CPU, on the step's torch threads: a fair limit for a
    step on N threads is the bandwidth N threads reach)."""
    import torch

    n = COPY_BYTES // 4
    src = torch.rand(n, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)  # fault the pages in before timing
    return lambda: dst.copy_(src)


class Steps:
    """The decode steps of one batch size after `context` cached columns: the lean step and
    the engine's forward, each from the same prefilled cache (its buffer truncated back, so
    every call appends the same column in place and costs the same)."""

    def __init__(self, model: Any, batch: int, context: int) -> None:
        import torch

        from lab.exercises.batch_engine.runtime import HFStepModel, KVCache
        from lab.models.lean_llama import lean_for

        lean = lean_for(model)
        if lean is None:
            raise ValueError("the target is not a plain Llama: LeanLlama does not run it")
        self.lean, self.engine, self.context = lean, HFStepModel(model), context
        device = self.engine.device
        gen = torch.Generator().manual_seed(batch)
        prompt = torch.randint(5, 4000, (batch, context), generator=gen).to(device)
        positions = torch.arange(context, device=device).expand(batch, context)
        with torch.inference_mode():
            _, self.base = lean.step(prompt, positions, None)
        self.ids = torch.randint(5, 4000, (batch, 1), generator=gen).to(device)
        self.positions = torch.full((batch, 1), context, device=device)
        self.mask = torch.ones((batch, context + 1), dtype=torch.long, device=device)
        self._kvcache = KVCache
        hidden, inner = model.config.hidden_size, model.config.intermediate_size
        dtype = next(model.parameters()).dtype
        self._x = torch.randn((batch, 1, hidden), generator=gen).to(device, dtype)
        self._inner = torch.randn((batch, 1, inner), generator=gen).to(device, dtype)

    def lean_step(self) -> Any:
        past = self.base.truncate(self.context)
        return self.lean.step(self.ids, self.positions, past)

    def projections(self) -> Any:
        """The step's matmuls alone (each layer's qkv, o, gate/up and down, then the head) on
        inputs of its shapes: the BLAS's share of the step, so step - projections is the
        per-operation overhead around them."""
        import torch

        with torch.inference_mode():
            for qkv, o, gate_up, down in self.lean.fused():
                qkv(self._x), o(self._x), gate_up(self._x), down(self._inner)
            assert self.lean._head is not None  # set by fused()
            return self.lean._head(self._x[:, -1])

    def weights_read(self) -> Any:
        """The same weight matrices summed, one `sum` each: their bytes read once with one add
        per element, on the step's thread - how fast this core reads them (from L3 or DRAM,
        as the step does), the floor of any step that reads them."""
        import torch

        with torch.inference_mode():
            total = [p.weight.sum() for layer in self.lean.fused() for p in layer]
            assert self.lean._head is not None  # set by fused()
            return total, self.lean._head.weight.sum()

    def engine_step(self) -> Any:
        past = self.base.truncate(self.context)
        return self.engine.forward(self.ids, self.mask, self.positions,
                                   self._kvcache(past.layers(), past))

    def static(self, mode: str) -> tuple[Callable[[], Any], DecodeRunner]:
        """The static step of this batch size (`DecodeRunner` in `mode`: eager, compile or
        graph), its stores loaded with the same prefilled cache, capacity context + 1 (the
        columns the limit counts); a call writes column `context` of every row, as the lean
        step does. Prepared (compiled, captured) here, outside the timing."""
        from lab.models.decode_runner import DecodeRunner

        b = int(self.ids.shape[0])
        runner = DecodeRunner(self.lean, self.context + 1, sizes=(b,), mode=mode,
                              say=lambda line: print(f"B={b}: {line}"))
        runner.static.load(self.base.cut(0, self.context))
        columns = self.positions[:, 0]
        runner.step(self.ids, self.positions, columns)  # compiles or captures now
        return (lambda: runner.step(self.ids, self.positions, columns)), runner


def _ratio_line(name: str, timing: Timing, copies: Timing, matmuls: Timing, cost: StepCost,
                cpu: bool) -> str:
    """One row: the step's best and median ms, the bandwidth limit's ms at the best copy, step /
    limit against the target; then the compute floor's ms at the best matmul, and step / the
    larger of the two floors (the roofline)."""
    bps = 2 * COPY_BYTES / (copies.best(cpu) / 1e3)
    limit_ms = (cost.weights + cost.kv) / bps * 1e3
    flops = 2 * MATMUL_N**3 / (matmuls.best(cpu) / 1e3)
    compute_ms = cost.flops / flops * 1e3
    ratio = timing.best(cpu) / limit_ms
    verdict = "ok" if ratio <= TARGET_RATIO else "over"
    return (f"{name:<24}{timing.best(cpu):>8.2f}{timing.median(cpu):>8.2f}{limit_ms:>8.2f}"
            f"{ratio:>7.2f}x {'(' + verdict + ')':<7}{compute_ms:>9.2f}"
            f"{timing.best(cpu) / max(limit_ms, compute_ms):>9.2f}x")


STATIC = "static step"  # the row names of the static step in each mode
MODE_ROWS = {"eager": STATIC, "compile": "static step, compiled", "graph": "static, CUDA graph",
             "native": "static step, C"}
NATIVE_PROJECTIONS = "projections alone, C"  # the C step's matmuls alone, through its tile


def run(model: Any, device: str, batches: list[int], context: int, rounds: int,
        modes: list[str]) -> None:
    import torch

    config = model.config
    dtype_bytes = next(model.parameters()).element_size()
    params = sum(p.numel() for p in model.parameters()) * dtype_bytes
    clock = Clock(device)
    copy = copier(device)
    steps = {b: Steps(model, b, context) for b in batches}
    names = ["lean step", "engine forward", "projections alone", "weights read alone"]
    calls: dict[tuple[int, str], Callable[[], Any]] = {}
    for b, s in steps.items():
        calls[(b, "lean step")], calls[(b, "engine forward")] = s.lean_step, s.engine_step
        calls[(b, "projections alone")] = s.projections
        calls[(b, "weights read alone")] = s.weights_read
        for mode in modes:
            try:
                call, runner = s.static(mode)
            except Exception as exc:  # report why, keep the other figures
                print(f"B={b}: the static step ({mode}) failed ({type(exc).__name__}: "
                      f"{str(exc)[:160]})")
                continue
            if runner.mode != mode:  # a compile given up: the eager row already has it
                continue
            calls[(b, MODE_ROWS[mode])] = call
            if runner.native is not None:
                calls[(b, NATIVE_PROJECTIONS)] = runner.native.projections(b)
            if runner.compile_seconds:
                print(f"B={b}: static step ({mode}) built in "
                      f"{sum(runner.compile_seconds.values()):.1f} s (wall, first call included)")
    names[1:1] = [MODE_ROWS[mode] for mode in modes]
    names.insert(names.index("projections alone") + 1, NATIVE_PROJECTIONS)
    copies, matmuls, matmul = Timing([], []), Timing([], []), matmuler(device)
    timings = {key: Timing([], []) for key in calls}
    for fn in [*calls.values(), matmul]:  # warm-up: allocations, the rotary table, the weights
        for _ in range(3):
            fn()
    for _ in range(rounds):  # interleaved, so a burst of load hits copy and steps alike
        clock.time(copy, copies)
        clock.time(matmul, matmuls)
        for key, fn in calls.items():
            clock.time(fn, timings[key])
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    cpu_too = not clock.cuda
    gbps = 2 * COPY_BYTES / (copies.best() / 1e3) / 1e9
    print(f"copy bandwidth: {COPY_BYTES >> 20} MiB copied, best of {rounds} "
          f"{copies.best():.2f} ms wall (median {copies.median():.2f}) = {gbps:.1f} GB/s moved "
          f"(read + write)" + (f"; CPU time best {copies.best(True):.2f} ms = "
                               f"{2 * COPY_BYTES / (copies.best(True) / 1e3) / 1e9:.1f} GB/s"
                               if cpu_too else ""))
    flops = 2 * MATMUL_N**3 / (matmuls.best() / 1e3)
    print(f"matmul FLOP/s: {MATMUL_N}x{MATMUL_N} fp32, best {matmuls.best():.2f} ms wall = "
          f"{flops / 1e9:.1f} GFLOP/s" + (f"; CPU time best {matmuls.best(True):.2f} ms = "
                                         f"{2 * MATMUL_N**3 / matmuls.best(True) / 1e6:.1f} "
                                         f"GFLOP/s" if cpu_too else ""))
    print(f"weights in the model: {params:,} bytes ({params / 1e6:.1f} MB)")
    for b in batches:
        cost = step_cost(config, b, context, dtype_bytes)
        print(f"\n## B = {b}, {context} cached columns: weight bytes {cost.weights:,}, "
              f"KV bytes {cost.kv:,}, total {cost.total:,} ({cost.total / 1e6:.2f} MB); "
              f"{cost.flops / 1e6:.1f} MFLOP")
        for clock_name, cpu in (("wall", False), ("CPU", True)) if cpu_too else (("wall", False),):
            print(f"   {clock_name + ' time, ms':<24}{'best':>8}{'median':>8}{'limit':>8}"
                  f"{'ratio':>8}{'':<7}{'compute':>9}{'roofline':>10}")
            for name in names:
                if (b, name) in timings:
                    print("   " + _ratio_line(name, timings[(b, name)], copies, matmuls, cost,
                                               cpu))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batches", default="1,8,16", help="comma-separated batch sizes")
    parser.add_argument("--context", type=int, default=64, help="cached columns per row")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads on a CPU, for the step and the copy and matmul "
                             "it is measured against alike")
    parser.add_argument("--rounds", type=int, default=30, help="timed calls of each, best of")
    parser.add_argument("--no-graphs", action="store_true", help="CUDA: skip graph capture")
    parser.add_argument("--no-compile", action="store_true",
                        help="CPU: skip compiling the static step (seconds per B)")
    parser.add_argument("--no-native", action="store_true",
                        help="CPU: skip the C step (built once, ~1 s; one thread)")
    args = parser.parse_args(argv)
    try:
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error(f"--batches must be comma-separated ints, got {args.batches!r}")
    if min(batches) < 1 or args.context < 1 or args.threads < 1 or args.rounds < 1:
        parser.error("--batches, --context, --threads and --rounds must be >= 1")

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("CUDA is unavailable here (torch.cuda.is_available() is False): nothing measured; "
              "run with --device cpu, or on a machine with an NVIDIA GPU", file=sys.stderr)
        return 2

    from lab.models import load_model

    torch.set_num_threads(args.threads)
    model = load_model("pycode-target", device=args.device, dtype="float32")
    if args.device == "cuda":
        name = torch.cuda.get_device_name(0)
        threads = "CUDA events, synchronised"
    else:
        name = "CPU"
        threads = f"step, copy and matmul on {args.threads} torch thread(s)"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# decode-step bench — pycode target fp32 on {args.device} ({name}), {threads}, "
          f"torch {torch.__version__}, load average {load:.1f} on {os.cpu_count()} cores")
    print("limit = (weight bytes + KV bytes read per step) / copy bandwidth measured in this "
          "run; ratio = best step / limit (target <= 2x); compute = the step's FLOPs / a "
          "matmul's FLOP/s in this run; roofline = best step / max(limit, compute)")
    modes = ["eager"]
    if args.device == "cuda" and not args.no_graphs:
        modes.append("graph")
    if args.device == "cpu" and not args.no_compile:
        modes.append("compile")
    if args.device == "cpu" and not args.no_native:
        modes.append("native")
    run(model, args.device, batches, args.context, args.rounds, modes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
