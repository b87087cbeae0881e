"""Timing helpers shared by the grader (reference) and the sandbox (learner).

Every measured run is bracketed by a CUDA synchronisation on GPU so asynchronous kernels are
counted; statistics are medians and nearest-rank p95 over interleaved runs.
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


def time_calls(fn: Callable[[], object], device: str, repeats: int) -> list[float]:
    """Wall-clock seconds of `repeats` calls of `fn`, each synchronised on GPU."""
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


def summarize(learner: list[float], reference: list[float]) -> dict[str, float]:
    """Ratios learner/reference (>1 means slower than the reference) and the raw medians."""
    l_med, r_med = statistics.median(learner), statistics.median(reference)
    l_p95, r_p95 = p95(learner), p95(reference)
    tiny = 1e-9
    return {
        "median_ratio": l_med / max(r_med, tiny),
        "p95_ratio": l_p95 / max(r_p95, tiny),
        "learner_median_ms": l_med * 1e3,
        "reference_median_ms": r_med * 1e3,
        "learner_p95_ms": l_p95 * 1e3,
        "reference_p95_ms": r_p95 * 1e3,
        "samples": float(len(learner)),
    }


def cpu_threads_one(device: str, uses_torch: bool) -> Callable[[], None]:
    """Pin torch to one thread on CPU (stable timings); returns a function that restores it."""
    if device != "cpu" or not uses_torch:
        return lambda: None
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    return lambda: torch.set_num_threads(previous)
