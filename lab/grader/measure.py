"""Measure a learner's call against the reference's: batches sized for each side's speed,
interleaved ABBA, every output checked; a `timed_once` case against the reference's calls beside
it; a learner's call that has already lost stopped early (`Overtime`); a level's gate checked."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

from lab.grader import events
from lab.grader.api import Case, Verdict
from lab.grader.children import Children
from lab.grader.isolation import ChildReply, Sandbox
from lab.grader.plan import timed_seeds
from lab.grader.results import CaseResult
from lab.grader.timing import (
    clearly_over,
    interleaved_order,
    matched_batches,
    next_batch_size,
    summarize,
)

EVENT_ROUNDS = 2  # timed requests per side, alternating (learner first, then reference first)


class Overtime:
    """Stops a learner's `timed_once` call that has already lost: once the reference's call
    beside it has finished in r seconds, a learner's call still running after bound x r (the
    level's speed gate) measures over the bound in wall-clock time, so its verdict is "too
    slow" whatever else happens. It is killed there (5% later, for the two stopwatches'
    skew) rather than waited for: a 20x solution of a 5 s stream answers in ~20 s, not 100."""

    SLACK = 1.05

    def __init__(self, sandbox: Sandbox, bound: float) -> None:
        self.sandbox, self.bound = sandbox, bound
        self.started = time.monotonic()
        self.reference_s = 0.0
        self.limit_s = 0.0
        self.fired = False
        self._done = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    @classmethod
    def watch(cls, sandbox: Sandbox, beside: Future[ChildReply | str] | None,
              gate: dict[str, float]) -> Overtime | None:
        """An armed watch for the learner's call starting now, or None (no reference call
        beside it, or no wall-clock ratio bound in the gate)."""
        bounds = [gate[k] for k in ("median_ratio_max", "p95_ratio_max") if k in gate]
        if beside is None or not bounds:
            return None
        watch = cls(sandbox, min(bounds))
        beside.add_done_callback(watch._arm)
        return watch

    def _arm(self, beside: Future[ChildReply | str]) -> None:
        reference = None if beside.cancelled() or beside.exception() else beside.result()
        if not isinstance(reference, ChildReply) or not reference.ok:
            return  # the reference failed: the case reports that, nothing to compare with
        self.reference_s = reference.elapsed_s
        self.limit_s = self.bound * reference.elapsed_s * self.SLACK
        with self._lock:
            if self._done:
                return
            delay = self.started + self.limit_s - time.monotonic()
            self._timer = threading.Timer(max(0.0, delay), self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._done:
                self.fired = True
                self.sandbox.signal_kill()

    def stopped(self) -> bool:
        """Called once the learner's call returned: disarms the watch; True if it fired."""
        with self._lock:
            self._done = True
            if self._timer is not None:
                self._timer.cancel()
            return self.fired

    def message(self) -> str:
        return (f"too slow for this level: stopped after {self.limit_s:.1f} s, over "
                f"{self.bound:g}× the reference's {self.reference_s:.2f} s for the same case "
                "run beside it (your result was not checked)")

    def metrics(self) -> dict[str, float]:
        return {"median_ratio": self.limit_s / max(self.reference_s, 1e-9),
                "reference_median_ms": self.reference_s * 1e3, "samples": 1.0,
                "stopped_after_ms": self.limit_s * 1e3}


def check_gate(gate: dict[str, float], metrics: dict[str, float]) -> str:
    """'' when every bound holds, else what was missed ("p95_ratio 1.8 > 1.5"). An upper bound
    on a timing ratio holds for its CPU-time twin too (`cpu_<name>`, see timing.summarize)."""
    missed = []
    for key, bound in sorted(gate.items()):
        name, _, side = key.rpartition("_")
        if name not in metrics or side not in ("max", "min"):
            continue
        value = metrics[name]
        cpu = metrics.get(f"cpu_{name}")
        if side == "max" and value <= bound and cpu is not None and cpu > bound:
            missed.append(f"{name} {cpu:.2f} > {bound:g} in CPU time (wall clock "
                          f"{value:.2f}: a busy machine)")
        elif side == "max" and value > bound:
            missed.append(f"{name} {value:.2f} > {bound:g}")
        if side == "min" and value < bound:
            missed.append(f"{name} {value:.2f} < {bound:g}")
    return ", ".join(missed)


class Measurer:
    """A run's timing: the learner's child against the reference's timing child, both reached
    through the run's `Children`; every timed output checked with the grading's `check`."""

    def __init__(self, children: Children, grading: Any, timing_repeats: int,
                 event_timing: bool) -> None:
        self.children = children
        self.grading = grading
        self.timing_repeats = timing_repeats
        self.event_timing = event_timing
        self.exercise, self.device = children.exercise, children.device

    def time_once(self, learner: ChildReply, reference: ChildReply,
                   more: list[ChildReply] | None = None) -> dict[str, float]:
        """A `timed_once` case's figures: its one call, against the median of the reference's
        calls that ran beside it (measured from here)."""
        on_cpu = self.device == "cpu"  # on a GPU the host's CPU time measures waiting
        runs = [reference, *(more or [])]
        return {**summarize([learner.elapsed_s], [r.elapsed_s for r in runs], 1, 1,
                            [learner.cpu_s] if on_cpu else None,
                            [r.cpu_s for r in runs] if on_cpu else None),
                "reference_runs": float(len(runs))}

    def _calibrate(self, child: Sandbox, case: Case,
                   warm_up: bool = True) -> tuple[int, float, float] | ChildReply:
        """Calls per batch for `child`: one discarded warm-up call (first calls pay for caches
        and page faults) unless the child has just run this case (`warm_up=False`: the
        learner's graded call, the reference's run ahead), then batches grown until one lasts
        BATCH_TARGET_S. Returns the size and the per-call wall and CPU time, or the failed
        ChildReply."""
        if warm_up:
            warm = self.children.batch(child, case, timed_seeds(1), self.children.timeout(case))
            if not warm.ok:
                return warm
        calls: int | None = 1
        while True:
            assert calls is not None
            probe = self.children.batch(child, case, timed_seeds(calls),
                                        self.children.timeout(case))
            if not probe.ok:
                return probe
            grown = next_batch_size(calls, probe.elapsed_s)
            if grown is None:
                return calls, probe.elapsed_s / calls, probe.cpu_s / calls
            calls = grown

    def time(self, case: Case, single_call_s: float,
             gate: dict[str, float] | None = None) -> dict[str, float] | CaseResult:
        """Round trips of batches to the learner's child and to a reference child, ABBA, each
        output checked (a child that skips the work to look fast fails); ratios of per-call
        medians, each side's batch sized for its own speed. A learner whose calibration is
        already far past the `gate` gets the calibration's figures (`timing.clearly_over`).
        On CUDA: `_time_on_device`."""
        self.children.join_reference_start()
        ref = self.children.reference_child()
        if isinstance(ref, str):
            return CaseResult(case, False, kind="grader_error", message=ref)
        if self.event_timing:
            return self._time_on_device(case, ref, single_call_s)
        sizes: dict[str, int] = {}
        call_s: dict[str, float] = {}
        cpu_call_s: dict[str, float] = {}
        # the learner's child has just answered this case (its graded call, before this)
        cold = {"reference": case.id not in self.children.reference_warm, "learner": False}
        for who, child in (("reference", ref), ("learner", self.children.sandbox)):
            got = self._calibrate(child, case, warm_up=cold[who])
            if isinstance(got, ChildReply):
                return self._timing_failure(case, who, got)
            sizes[who], call_s[who], cpu_call_s[who] = got
        over = clearly_over(gate or {}, call_s, cpu_call_s,
                            cpu_call_s["reference"] * sizes["reference"]) \
            if self.device == "cpu" else None  # on a GPU the host's CPU time measures waiting
        if over is not None:
            return over
        sizes = matched_batches(sizes, call_s)
        most = sizes["reference"]
        per_batch = self.children.timeout(case) + 4 * most * max(single_call_s, *call_s.values())
        learner: list[float] = []
        reference: list[float] = []
        learner_cpu: list[float] = []
        reference_cpu: list[float] = []
        warmup = self.exercise.timing_warmup
        for i in range(warmup + self.timing_repeats):
            seeds = timed_seeds(most)  # drawn now, while the learner's child is stopped
            results: dict[str, ChildReply] = {}
            for who in interleaved_order(i):
                child = self.children.sandbox if who == "learner" else ref
                limit = min(per_batch, max(0.0, self.children.deadline - time.monotonic()))
                out = self.children.batch(child, case, seeds[: sizes[who]], limit)
                if not out.ok:
                    return self._timing_failure(case, who, out)
                results[who] = out
            wrong = self._check_batch(case, seeds, sizes, results["learner"],
                                      results["reference"])
            if wrong is not None:
                return wrong
            if i >= warmup:
                for who, times, cpu in (("learner", learner, learner_cpu),
                                        ("reference", reference, reference_cpu)):
                    times.append(results[who].elapsed_s)
                    cpu.append(results[who].cpu_s)
        on_cpu = self.device == "cpu"  # on a GPU the host's CPU time measures waiting
        return summarize(learner, reference, sizes["learner"], sizes["reference"],
                         learner_cpu if on_cpu else None, reference_cpu if on_cpu else None)

    def _timing_failure(self, case: Case, who: str, out: ChildReply) -> CaseResult:
        if who == "reference":
            return CaseResult(case, False, kind="grader_error",
                              message=f"the reference failed while timing: {out.message}")
        self.children.lost(out)
        return CaseResult(case, False, kind=out.kind or "exception",
                          message=f"while timing: {out.message}",
                          traceback=out.traceback, output=out.output)

    def _check_batch(self, case: Case, seeds: list[int], sizes: dict[str, int], got: ChildReply,
                     want: ChildReply) -> CaseResult | None:
        """Each side must answer every call it was sent; every learner value is checked against
        the reference's for the same seed (the learner's seeds prefix the reference's)."""
        n = sizes["learner"]
        if len(got.values) != n or len(want.values) != sizes["reference"]:
            return CaseResult(case, False, kind="protocol",
                              message=f"while timing: {len(got.values)} results for {n} calls")
        return self._check_values(case, seeds[:n], got.values, want.values[:n], got.output)

    def _check_values(self, case: Case, seeds: list[int], got: list[Any], want: list[Any],
                      output: str) -> CaseResult | None:
        """The first of the learner's values that the reference's for the same seed rejects."""
        for seed, g, w in zip(seeds, got, want, strict=True):
            try:
                verdict = self.grading.check(case, g, w)
            except Exception as exc:
                verdict = Verdict(False, f"{type(exc).__name__}: {exc}")
            if not verdict.passed:
                return CaseResult(case, False, kind="wrong", output=output,
                                  message=f"while timing (a run with seed {seed}): "
                                          f"{verdict.message}",
                                  expected=events.short_repr(w), got=events.short_repr(g))
        return None

    def _time_on_device(self, case: Case, ref: Sandbox,
                        single_call_s: float) -> dict[str, float] | CaseResult:
        """GPU graders' timing (`lab.grader.gpu_timing`): each side times calls on the
        device's clock in its own child (warm-up, L2 flush, CUDA events, the stop rule), in
        EVENT_ROUNDS requests alternating which side goes first, every call with a fresh seed;
        a random subset of the learner's outputs is checked against the reference's for the
        same seed; ratios of medians."""
        from lab.grader import gpu_timing

        rule = gpu_timing.StopRule()
        warmup = max(1, self.exercise.timing_warmup)
        nbytes = gpu_timing.flush_bytes(self.device)
        times: dict[str, list[float]] = {"learner": [], "reference": []}
        for i in range(EVENT_ROUNDS):
            seeds = timed_seeds(warmup + rule.max_calls)
            replies: dict[str, ChildReply] = {}
            for who in interleaved_order(i):
                child = self.children.sandbox if who == "learner" else ref
                limit = min(self.children.timeout(case) + rule.cap_s + (warmup + rule.min_calls)
                            * max(single_call_s, 1e-3) * 4,
                            max(0.0, self.children.deadline - time.monotonic()))
                out = child.request(self.children.message(
                    "timed", case, self.children.ctx, seeds, warmup=warmup, flush_bytes=nbytes,
                    rule=rule.to_wire()), limit)
                if not out.ok:
                    return self._timing_failure(case, who, out)
                bad = _bad_timing(out, seeds[warmup:])
                if bad and who == "reference":
                    return CaseResult(case, False, kind="grader_error",
                                      message=f"the reference's timing: {bad}")
                if bad:
                    return CaseResult(case, False, kind="protocol",
                                      message=f"while timing: {bad}", output=out.output)
                replies[who] = out
            got, want = replies["learner"], replies["reference"]
            checked = gpu_timing.pick_checked(got.seeds, want.seeds)
            wrong = self._check_values(case, [got.seeds[k] for k in checked],
                                       [got.values[k] for k in checked],
                                       [want.values[k] for k in checked], got.output)
            if wrong is not None:
                return wrong
            for who in times:
                times[who] += [float(t) for t in replies[who].times]
        figures = summarize(times["learner"], times["reference"])
        return {**figures, "reference_samples": float(len(times["reference"])),
                "learner_sem_pct": 100 * gpu_timing.relative_sem(times["learner"]),
                "reference_sem_pct": 100 * gpu_timing.relative_sem(times["reference"]),
                "flush_mb": nbytes / 2**20}


def _bad_timing(out: ChildReply, sent: list[int]) -> str:
    """What is wrong with a child's timed reply ("" when nothing): one finite, non-negative
    time and one value per call, on the seeds it was sent, in order."""
    n = len(out.times)
    if n == 0 or len(out.values) != n or len(out.seeds) != n:
        return (f"{n} times, {len(out.values)} results and {len(out.seeds)} seeds reported "
                "for the timed calls")
    if out.seeds != sent[:n]:
        return "the timed calls did not use the seeds they were sent"
    if not all(isinstance(t, int | float) and not isinstance(t, bool) and 0 <= t < 1e6
               for t in out.times):
        return "a reported time is not a number of seconds"
    return ""
