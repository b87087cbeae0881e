"""Timing statistics, and the stopwatch the grader holds from outside the sandbox.

The grader times round trips of *batches* of calls to a sandbox child (`Sandbox.request`
measures from sending to the reply), never anything the child reports: a learner's process can
patch its own clock but not the grader's. The reference runs in a sandbox child of the same kind,
batches are sized so one batch lasts at least `BATCH_TARGET_S` (short calls are what
scheduler latency inflates; see `next_batch_size`; each side is sized for its own speed, after a
discarded warm-up call), learner and reference batches alternate (ABBA order) and the figures are
ratios of per-call medians. The child synchronises CUDA at the end of each batch.
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable


def synchronize(device: str) -> None:
    """Wait for queued CUDA work; a no-op on CPU or when torch was never imported."""
    if device != "cuda":
        return
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


BATCH_TARGET_S = 0.1
MAX_BATCH = 1024


def next_batch_size(calls: int, elapsed_s: float) -> int | None:
    """Calibration step: the next batch size to try, or None when a reference batch of `calls`
    calls already lasts BATCH_TARGET_S. A round trip also pays the child's wake-up latency
    (milliseconds on a loaded machine), so the size is grown and re-measured rather than
    computed from one short call: latency then stays a small part of every measured batch."""
    if elapsed_s >= BATCH_TARGET_S or calls >= MAX_BATCH:
        return None
    grow = max(2, math.ceil(BATCH_TARGET_S / max(elapsed_s, 1e-6)))
    return min(MAX_BATCH, calls * grow)


def interleaved_order(i: int) -> tuple[str, str]:
    """ABBA: learner first on even pairs, reference first on odd ones (drift cancels)."""
    return ("learner", "reference") if i % 2 == 0 else ("reference", "learner")


def time_calls(fn: Callable[[], object], device: str, repeats: int) -> list[float]:
    """Wall-clock seconds of `repeats` calls of `fn`, each synchronised on GPU (for benches and
    exercise tests that time in-process; the grader itself times from outside the sandbox)."""
    durations: list[float] = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        fn()
        synchronize(device)
        durations.append(time.perf_counter() - start)
    return durations


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile (for few samples this is close to the max, on purpose)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def summarize(learner: list[float], reference: list[float], learner_calls: int = 1,
              reference_calls: int = 1) -> dict[str, float]:
    """Ratios learner/reference per call (>1 means slower than the reference) of the batch
    times measured, `learner_calls` and `reference_calls` calls per batch (each side's batches
    are sized for its own speed: see `next_batch_size`)."""
    lc, rc = max(1, learner_calls), max(1, reference_calls)
    l_med, r_med = statistics.median(learner) / lc, statistics.median(reference) / rc
    l_p95, r_p95 = p95(learner) / lc, p95(reference) / rc
    tiny = 1e-12
    return {
        "median_ratio": l_med / max(r_med, tiny),
        "p95_ratio": l_p95 / max(r_p95, tiny),
        "learner_median_ms": l_med * 1e3,
        "reference_median_ms": r_med * 1e3,
        "learner_p95_ms": l_p95 * 1e3,
        "reference_p95_ms": r_p95 * 1e3,
        "samples": float(len(learner)),
        "batch_calls": float(rc),
        "learner_batch_calls": float(lc),
    }


def cpu_threads_one(device: str, uses_torch: bool) -> Callable[[], None]:
    """Pin torch to one thread on CPU (stable timings); returns a function that restores it."""
    if device != "cpu" or not uses_torch:
        return lambda: None
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    return lambda: torch.set_num_threads(previous)
