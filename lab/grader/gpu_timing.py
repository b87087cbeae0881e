"""Timing on CUDA the way GPU graders do it, inside the sandbox child (`op: "timed"`).

A kernel launch returns before the GPU has run it, so a round trip timed from the grader
measures the host, not the device. On CUDA each call is therefore timed in the child with CUDA
events recorded after a synchronise, after discarded warm-up calls, with the L2 cache flushed
before every timed call (a buffer larger than the L2 is written, so no call finds the previous
one's data still cached), and calls are repeated until the standard error of the mean is under
1% of the mean or a time cap is reached. Every call has a fresh seed from the grader (no two ask
the same question), every output comes back, and the grader checks a random subset of them
against the reference's output for the same seed (`pick_checked`), so caching answers or
deferring work fails. The figures are ratios of medians (`timing.summarize`).

Everything here runs on the CPU too with `CpuClock` and a bytearray flush buffer: the logic is
tested without a GPU (`GradeOptions(event_timing=True)`), and `scripts/gpu_check.sh` runs it on
CUDA. The per-call times come from the learner's own process: a determined learner could forge
them (lab/README.md: the judge stops casual cheating, not the machine's owner).
"""

from __future__ import annotations

import math
import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

MIN_FLUSH_BYTES = 8 * 2**20  # the CPU stand-in's buffer (larger than a laptop's last-level cache)
CHECKED_CALLS = 8  # outputs checked per request (all of them when fewer)


@dataclass(frozen=True)
class StopRule:
    """When to stop timing: at least `min_calls`, then once the standard error of the mean is
    under `sem_target` of the mean, or after `cap_s` seconds of timed calls, or `max_calls`."""

    min_calls: int = 10
    max_calls: int = 200
    sem_target: float = 0.01
    cap_s: float = 1.0

    @classmethod
    def every(cls, calls: int) -> StopRule:
        """No stop before all `calls` seeds have had their call (the graded call, a batch)."""
        return cls(min_calls=calls, max_calls=calls, sem_target=0.0, cap_s=math.inf)

    def to_wire(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> StopRule:
        return cls(int(data["min_calls"]), int(data["max_calls"]), float(data["sem_target"]),
                   float(data["cap_s"]))


def relative_sem(times: list[float]) -> float:
    """Standard error of the mean over the mean (inf with fewer than two samples)."""
    if len(times) < 2:
        return math.inf
    mean = statistics.fmean(times)
    if mean <= 0:
        return math.inf
    return statistics.stdev(times) / math.sqrt(len(times)) / mean


def should_stop(times: list[float], spent_s: float, rule: StopRule) -> bool:
    if len(times) >= rule.max_calls or spent_s >= rule.cap_s:
        return True
    return len(times) >= rule.min_calls and relative_sem(times) < rule.sem_target


class Clock(Protocol):
    """Marks on a device timeline: `mark()` records one, `seconds(a, b)` between two (after
    `synchronize()`)."""

    def synchronize(self) -> None: ...

    def mark(self) -> Any: ...

    def seconds(self, start: Any, end: Any) -> float: ...


class CpuClock:
    """The CPU stand-in: marks are perf_counter readings."""

    def synchronize(self) -> None:
        return None

    def mark(self) -> float:
        return time.perf_counter()

    def seconds(self, start: float, end: float) -> float:
        return end - start


class CudaClock:
    """CUDA events (enable_timing) on the current stream."""

    def __init__(self) -> None:
        import torch

        self.torch: Any = torch

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    def mark(self) -> Any:
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def seconds(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end)) / 1e3  # elapsed_time is in milliseconds


def l2_bytes(device: str) -> int:
    """The device's L2 size (CUDA), or 0 when unknown (the CPU)."""
    if device != "cuda":
        return 0
    import torch

    return int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)


def flush_bytes(device: str) -> int:
    """Twice the L2 (at least MIN_FLUSH_BYTES): the buffer written between timed calls."""
    return max(MIN_FLUSH_BYTES, 2 * l2_bytes(device))


class L2Flush:
    """A buffer of `nbytes` written whole before each timed call (on the device for CUDA)."""

    def __init__(self, device: str, nbytes: int) -> None:
        self.nbytes = nbytes
        self.writes = 0
        if device == "cuda":
            import torch

            buffer = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
            self._write: Callable[[], object] = buffer.zero_
        else:
            data, zeros = bytearray(nbytes), bytes(nbytes)

            def write() -> None:
                data[:] = zeros

            self._write = write

    def __call__(self) -> None:
        self._write()
        self.writes += 1


@dataclass
class Timed:
    """One request's timing: per-call seconds, each call's output, the seeds they used."""

    times: list[float]
    values: list[Any]
    seeds: list[int]
    flushes: int

    def to_reply(self) -> dict[str, Any]:
        return {"ok": True, "times": self.times, "values": self.values, "seeds": self.seeds,
                "flushes": self.flushes}


def timed_calls(call: Callable[[int], Any], seeds: list[int], warmup: int, clock: Clock,
                flush: Callable[[], None], rule: StopRule) -> Timed:
    """Run `call(seed)` for each seed, the first `warmup` untimed, then until `rule` says stop
    or the seeds run out, each timed call flushed, synchronised and marked before and after.
    The child's one driver for every request (`sandbox.Child.calls`): every call, warm-up or
    timed, graded or not, is made from the same line, so the code called sees the same frames."""
    times: list[float] = []
    values: list[Any] = []
    used: list[int] = []
    spent = 0.0
    flushes = 0
    for i, seed in enumerate(seeds):
        timed = i >= warmup
        if timed:
            flush()
            flushes += 1
            clock.synchronize()
        start = clock.mark()
        value = call(seed)
        end = clock.mark()
        clock.synchronize()
        if not timed:
            continue
        seconds = clock.seconds(start, end)
        times.append(seconds)
        values.append(value)
        used.append(seed)
        spent += seconds
        if should_stop(times, spent, rule):
            break
    return Timed(times, values, used, flushes)


def pick_checked(learner_seeds: list[int], reference_seeds: list[int],
                 count: int = CHECKED_CALLS) -> list[int]:
    """Indices of the learner's timed calls whose outputs are checked: a random subset (drawn
    from the OS, after the calls ran) of those the reference also answered."""
    common = min(len(learner_seeds), len(reference_seeds))
    if learner_seeds[:common] != reference_seeds[:common]:
        raise ValueError("the two sides did not time the same seeds")
    return sorted(secrets.SystemRandom().sample(range(common), min(count, common)))
