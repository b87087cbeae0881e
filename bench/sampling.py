"""Benchmark the sampling reference's batched processors against transformers' own, B = 1..256.

    python bench/sampling.py [--device auto|cpu|cuda] [--vocab 32000] [--repeats 5] [--quick]

For each batch size B (V = 32,000, histories of 128 prompt + 128 output ids, the timed case
L2-timed-top-p's parameter mix: every request its own T, k, min-p and penalties, and a top-p),
one run times, per call (median of --repeats):
  batched     the reference's `process_batch` (one op per stage over the rows that use it);
  hf-per-row  transformers' processors applied row by row with each row's own parameters (the
              reference's level-1 `process_logits`, which IS those processors, in a loop);
  hf-shared   transformers' processors on the whole batch with ONE parameter set (what
              `generate` can do: the floor that per-request parameters are paid against);
  hist-loop   the batch with the repetition penalty as a Python loop over each row's history ids
              (tests/sampling/broken/batch_history_loop.py: what L2-timed-history's gate is for).
Ratios are to `batched`, measured in the same run. Run it with `nice`; a shared CPU is noisy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _median_ms(fn: Any, repeats: int, sync: Any) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def _one(b: int, vocab: int, repeats: int, device: str, sync: Any, loop: Any) -> None:
    import torch
    from transformers import (
        LogitsProcessorList,
        MinPLogitsWarper,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    from lab.exercises.sampling.inputs import random_batch
    from lab.reference import sampling as ref

    logits, params, prompts, outputs = random_batch(b, b, vocab, 128, device, b, penalised=True)
    shared = LogitsProcessorList([RepetitionPenaltyLogitsProcessor(1.3),
                                  TemperatureLogitsWarper(0.7), TopKLogitsWarper(50),
                                  TopPLogitsWarper(0.9), MinPLogitsWarper(0.05)])
    ids = torch.tensor([[*p, *o] for p, o in zip(prompts, outputs, strict=True)], device=device)
    batched = _median_ms(lambda: ref.process_batch(logits, params, prompts, outputs), repeats,
                         sync)
    per_row = _median_ms(lambda: [ref.process_logits(logits[r], params[r], prompts[r],
                                                     outputs[r]) for r in range(b)],
                         repeats, sync)
    hf_shared = _median_ms(lambda: shared(ids, logits.clone()), repeats, sync)
    hist = _median_ms(lambda: loop.process_batch(logits, params, prompts, outputs), repeats,
                      sync)
    print(f"{b:>4} {batched:>9.2f} {per_row:>11.2f} {hf_shared:>10.2f} {hist:>10.2f}   "
          f"{per_row / batched:>5.2f}x / {hf_shared / batched:>5.2f}x / {hist / batched:>5.2f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="B = 1, 16, 64 only")
    args = parser.parse_args(argv)

    import torch

    from lab.models import resolve_device
    from tests.sampling.conftest import load_solution

    device = resolve_device(args.device)
    if device == "cpu":
        torch.set_num_threads(1)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    loop = load_solution(Path(__file__).resolve().parents[1] / "tests" / "sampling" / "broken"
                         / "batch_history_loop.py")
    sizes = [1, 16, 64] if args.quick else [1, 4, 16, 64, 256]
    print(f"device {device}, V = {args.vocab}, torch threads {torch.get_num_threads()}, "
          f"median of {args.repeats} calls (ms)")
    print(f"{'B':>4} {'batched':>9} {'hf-per-row':>11} {'hf-shared':>10} {'hist-loop':>10}   "
          f"ratios to batched (per-row / shared / loop)")
    for b in sizes:
        _one(b, args.vocab, args.repeats, device, sync, loop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
