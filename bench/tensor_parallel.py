"""Benchmark the tensor-parallel reference: greedy decoding of the shipped target at W = 1, 2, 4.

    python bench/tensor_parallel.py [--new 32] [--prompt 16] [--device cpu|cuda] [--repeats 3]

Each world size runs the reference's `TPDecoder` in W processes on one torch.distributed group
(lab/exercises/tensor_parallel/runtime.run_ranks: forked ranks, gloo over loopback on the CPU;
NCCL on CUDA when every rank has its own GPU), decodes `--new` tokens after a `--prompt`-token
prefill, and reports per token: the median wall time of a decode step on rank 0, the bytes each
rank all-reduced (the activations: 2 per layer x hidden x 4 B) and the bytes a ring all-reduce
moves per rank, beside the formula 2(W-1)/W x hidden x bytes per element per all-reduce. Ratios
are to W = 1 in the same run; every W must decode the same tokens. On this CPU the model is tiny
(hidden 256), so communication and per-process overhead dominate: TP does not pay here, which is
the point of measuring it. Run it with `nice`; compare ratios within one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class _Decode:
    """One rank's decode: prefill, then `new` steps timed one by one (a plain callable so
    spawned ranks can pickle it)."""

    def __init__(self, prompt: list[int], new: int, checkpoint: str) -> None:
        self.prompt, self.new, self.checkpoint = prompt, new, checkpoint

    def __call__(self, solution: Any, rank: int, world: int, group: Any) -> Any:
        from lab.exercises.tensor_parallel import runtime

        log = runtime.CURRENT["log"]
        dec = solution.TPDecoder(self.checkpoint, group)
        token = dec.prefill(self.prompt)
        tokens, times, marks = [token], [], [len(log.calls)]
        for _ in range(self.new - 1):
            t0 = time.perf_counter()
            token = dec.step(token)
            times.append(time.perf_counter() - t0)
            tokens.append(token)
            marks.append(len(log.calls))
        return {"tokens": tokens, "times": times, "marks": marks}


def measure(world: int, prompt: list[int], new: int, device: str) -> dict[str, Any]:
    import lab.reference.tensor_parallel as reference
    from lab.exercises.tensor_parallel import runtime

    ranks = runtime.run_ranks(reference, world, _Decode(prompt, new, str(runtime.SHIPPED_TARGET)),
                              device=device, deadline_s=300.0)
    for r in ranks:
        if r.get("error"):
            raise SystemExit(f"W = {world}: rank {r['rank']} failed: {r['error']}")
    r0 = ranks[0]
    log, marks = r0["log"], r0["value"]["marks"]
    steps = [log[marks[j]:marks[j + 1]] for j in range(len(marks) - 1)]
    payload = statistics.median(sum(c[2] for c in s if c[0] == "all_reduce") for s in steps)
    calls = statistics.median(sum(1 for c in s if c[0] == "all_reduce") for s in steps)
    return {"world": world, "backend": r0["backend"], "tokens": r0["value"]["tokens"],
            "step_s": statistics.median(r0["value"]["times"]), "payload": payload,
            "moved": 2 * (world - 1) / world * payload, "all_reduces": calls}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--new", type=int, default=32, help="tokens decoded per run")
    parser.add_argument("--prompt", type=int, default=16, help="prompt length (tokens)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--repeats", type=int, default=3, help="runs per W (median of medians)")
    parser.add_argument("--worlds", default="1,2,4", help="world sizes, comma-separated")
    args = parser.parse_args(argv)
    import random

    from lab.exercises.tensor_parallel import runtime

    cfg = runtime.read_config()
    rng = random.Random(0)
    prompt = [0] + [rng.randrange(2, cfg["vocab"]) for _ in range(args.prompt - 1)]
    rows = []
    for world in [int(w) for w in args.worlds.split(",")]:
        runs = [measure(world, prompt, args.new, args.device) for _ in range(args.repeats)]
        best = runs[0]
        best["step_s"] = statistics.median(r["step_s"] for r in runs)
        rows.append(best)
    base = rows[0]
    same = all(r["tokens"] == base["tokens"] for r in rows)
    hidden, layers = cfg["hidden"], cfg["layers"]
    print(f"shipped target: hidden {hidden}, {layers} layers, {cfg['heads']} heads / "
          f"{cfg['kv_heads']} KV heads; prompt {args.prompt} tokens, {args.new} decoded; "
          f"{args.device}")
    print(f"{'W':>2} {'backend':>7} {'ms/token':>9} {'x W=1':>6} {'all-reduces':>11} "
          f"{'payload B':>10} {'moved B/rank':>12} {'formula B':>10}")
    for r in rows:
        w = r["world"]
        formula = 2 * (w - 1) / w * hidden * 4 * 2 * layers
        print(f"{w:>2} {r['backend']:>7} {r['step_s'] * 1e3:>9.2f} "
              f"{r['step_s'] / base['step_s']:>6.2f} {r['all_reduces']:>11.0f} "
              f"{r['payload']:>10.0f} {r['moved']:>12.0f} {formula:>10.0f}")
    print(f"tokens equal across W: {same}")
    print("formula: one all-reduce of n bytes moves 2(W-1)/W x n per rank (ring); n = hidden x "
          f"4 B = {hidden * 4} B, {2 * layers} all-reduces per token (attention + MLP per layer)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
