"""Timing statistics, and the stopwatch the grader holds from outside the sandbox.

The grader times round trips of *batches* of calls to a sandbox child (`Sandbox.request`
measures from sending to the reply), never anything the child reports: a learner's process can
patch its own clock but not the grader's. The reference runs in a sandbox child of the same kind,
batches are sized so one batch lasts at least `BATCH_TARGET_S` (short calls are what
scheduler latency inflates; see `next_batch_size`; each side is calibrated after a discarded
warm-up call, then both batches are matched to last about as long: `matched_batches`), learner
and reference batches alternate (ABBA order) and the figures are ratios of per-call medians, in
wall-clock and in CPU time. The child synchronises CUDA at the end of each batch.
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
GROW_HEADROOM = 1.15  # a grown batch aims 15% past the target (noise)


def next_batch_size(calls: int, elapsed_s: float) -> int | None:
    """Calibration step: the next batch size to try, or None when a batch of `calls` calls
    already lasts BATCH_TARGET_S. A round trip also pays the child's wake-up latency
    (milliseconds on a loaded machine), so the size is grown and re-measured rather than
    computed once from one short call: latency then stays a small part of every measured batch.
    The step aims GROW_HEADROOM past the target (so at least one call more), not at a doubling: a
    probe just short of the target would otherwise double every timed batch of the case."""
    if elapsed_s >= BATCH_TARGET_S or calls >= MAX_BATCH:
        return None
    wanted = math.ceil(calls * GROW_HEADROOM * BATCH_TARGET_S / max(elapsed_s, 1e-6))
    return min(MAX_BATCH, wanted)


def matched_batches(calls: dict[str, int], call_s: dict[str, float]) -> dict[str, int]:
    """Calls per batch for "learner" and "reference" so both batches last about as long as the
    longer one. A load spike then falls on both alike: a 100 ms reference batch beside a 1 s
    learner batch would catch spikes the long one averages out, and a 50x bug would measure
    20x on a busy machine. The learner is never sent more calls than the reference (its every
    value is checked against the reference's for the same seed)."""
    span = max(calls[w] * call_s[w] for w in ("learner", "reference"))

    def lasting(who: str) -> int:
        return min(MAX_BATCH, max(calls[who], math.ceil(span / max(call_s[who], 1e-9))))

    learner = lasting("learner")
    return {"reference": max(lasting("reference"), learner), "learner": learner}


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


MIN_CPU_S = 0.05  # below this the reference's CPU time (10 ms ticks) is too coarse to divide by


def summarize(learner: list[float], reference: list[float], learner_calls: int = 1,
              reference_calls: int = 1, learner_cpu: list[float] | None = None,
              reference_cpu: list[float] | None = None) -> dict[str, float]:
    """Ratios learner/reference per call (>1 means slower than the reference) of the batch
    times measured, `learner_calls` and `reference_calls` calls per batch (each side's batches
    are sized for its own speed: see `next_batch_size`).

    With the CPU seconds the kernel charged each batch, the same ratios of CPU time too
    (`cpu_median_ratio`, `cpu_p95_ratio`): on a loaded machine both children wait for a core,
    and waits inflate a short reference batch more than a long learner batch, so wall-clock
    ratios shrink toward 1 while CPU-time ratios do not; a gate holds both (`check_gate`)."""
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
        **_cpu_ratios(learner_cpu, reference_cpu, lc, rc),
    }


def _cpu_ratios(learner: list[float] | None, reference: list[float] | None, lc: int,
                rc: int) -> dict[str, float]:
    if not learner or not reference or statistics.median(reference) < MIN_CPU_S:
        return {}
    r_med, r_p95 = statistics.median(reference) / rc, max(p95(reference) / rc, 1e-12)
    return {"cpu_median_ratio": statistics.median(learner) / lc / r_med,
            "cpu_p95_ratio": p95(learner) / lc / r_p95}


CLEAR_OVER = 2.5  # how far past a bound calibration must put a learner to skip the batches


def clearly_over(gate: dict[str, float], wall_s: dict[str, float], cpu_s: dict[str, float],
                 reference_batch_cpu_s: float) -> dict[str, float] | None:
    """Figures from calibration alone (per-call seconds of "learner" and "reference", wall and
    CPU), when they put the learner CLEAR_OVER times past the gate's wall-clock ratio bound in
    both clocks: the interleaved batches could not bring a ratio that far back under it (the
    margin a load-proof verdict needs), and for a learner that slow they would last seconds
    each (a Python loop over the vocabulary: ~40 s of batches). None otherwise, and when the
    reference's calibrated batch used too little CPU time to divide by."""
    bounds = [gate[k] for k in ("median_ratio_max", "p95_ratio_max") if k in gate]
    if not bounds or reference_batch_cpu_s < MIN_CPU_S:
        return None
    wall = wall_s["learner"] / max(wall_s["reference"], 1e-9)
    cpu = cpu_s["learner"] / max(cpu_s["reference"], 1e-9)
    if min(wall, cpu) < CLEAR_OVER * min(bounds):
        return None
    return {"median_ratio": wall, "p95_ratio": wall, "cpu_median_ratio": cpu,
            "cpu_p95_ratio": cpu, "learner_median_ms": wall_s["learner"] * 1e3,
            "reference_median_ms": wall_s["reference"] * 1e3, "samples": 1.0,
            "calibration_only": 1.0}


def cpu_threads_one(device: str, uses_torch: bool) -> Callable[[], None]:
    """Pin torch to one thread on CPU (stable timings); returns a function that restores it."""
    if device != "cpu" or not uses_torch:
        return lambda: None
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    return lambda: torch.set_num_threads(previous)
