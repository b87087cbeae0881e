"""Timing on the device's clock as GPU graders do (lab.grader.gpu_timing), exercised with its CPU
stand-in: warm-up, an L2 flush before every timed call, the stop rule on the spread, the seeds
and outputs the child reports, a random subset of outputs checked; then whole gradings of the
timed fixture with `event_timing=True`."""

from __future__ import annotations

import math
import statistics
from typing import Any

import pytest

from lab.grader import gpu_timing
from lab.grader.gpu_timing import StopRule, pick_checked, relative_sem, should_stop, timed_calls
from lab.grader.isolation import ChildReply
from lab.grader.measure import _bad_timing


class LogClock:
    """A clock that logs what happens and ticks 1 ms per mark (so times are exact)."""

    def __init__(self, log: list[str]) -> None:
        self.log, self.now = log, 0.0

    def synchronize(self) -> None:
        self.log.append("sync")

    def mark(self) -> float:
        self.log.append("mark")
        self.now += 0.001
        return self.now

    def seconds(self, start: float, end: float) -> float:
        return end - start


def test_each_timed_call_is_flushed_synchronised_and_marked_after_untimed_warm_ups() -> None:
    log: list[str] = []
    result = timed_calls(lambda seed: log.append(f"call {seed}") or seed * 10, [1, 2, 3, 4, 5],
                         warmup=2, clock=LogClock(log), flush=lambda: log.append("flush"),
                         rule=StopRule(min_calls=10, max_calls=10))
    # warm-ups are made from the same line as timed calls (same frames), neither flushed nor kept
    assert log == [*[x for s in (1, 2) for x in ("mark", f"call {s}", "mark", "sync")],
                   *[x for s in (3, 4, 5) for x in ("flush", "sync", "mark", f"call {s}",
                                                    "mark", "sync")]]
    assert result.seeds == [3, 4, 5] and result.values == [30, 40, 50]
    assert result.flushes == 3 and all(math.isclose(t, 0.001) for t in result.times)


def test_the_stop_rule_on_the_standard_error_and_the_cap() -> None:
    rule = StopRule(min_calls=5, max_calls=50, sem_target=0.01, cap_s=1.0)
    steady = [1.0] * 4
    assert not should_stop(steady, 0.004, rule)  # fewer than min_calls
    assert should_stop([*steady, 1.0], 0.005, rule)  # no spread at all
    noisy = [1.0, 2.0] * 5
    assert relative_sem(noisy) == pytest.approx(statistics.stdev(noisy) / math.sqrt(10) / 1.5)
    assert relative_sem(noisy) > 0.01 and not should_stop(noisy, 0.01, rule)
    assert should_stop(noisy, 1.0, rule)  # the time cap
    assert should_stop([1.0, 2.0] * 25, 0.0, rule)  # max_calls
    assert relative_sem([1.0]) == math.inf


def test_a_noisy_call_is_repeated_until_its_mean_is_known_to_one_percent() -> None:
    import random

    rng = random.Random(5)

    class Noisy(LogClock):
        def seconds(self, start: float, end: float) -> float:
            return rng.uniform(0.9, 1.1)

    result = timed_calls(lambda s: s, list(range(500)), 0, Noisy([]), lambda: None,
                         StopRule(min_calls=10, max_calls=490, cap_s=1e9))
    assert relative_sem(result.times) < 0.01 <= relative_sem(result.times[:-1])
    assert 10 < len(result.times) < 490


def test_the_flush_buffer_is_larger_than_the_l2_and_written_each_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert gpu_timing.flush_bytes("cpu") == gpu_timing.MIN_FLUSH_BYTES
    monkeypatch.setattr(gpu_timing, "l2_bytes", lambda device: 50 * 2**20)  # an H100's L2
    assert gpu_timing.flush_bytes("cuda") == 100 * 2**20
    flush = gpu_timing.L2Flush("cpu", 4096)
    flush()
    flush()
    assert flush.writes == 2 and flush.nbytes == 4096


def test_the_checked_outputs_are_a_random_subset_of_the_common_calls() -> None:
    picks = {tuple(pick_checked(list(range(100)), list(range(60)))) for _ in range(20)}
    assert len(picks) > 1  # drawn afresh each time
    assert all(len(p) == gpu_timing.CHECKED_CALLS and max(p) < 60 for p in picks)
    assert pick_checked([7, 8, 9], [7, 8, 9, 10]) == [0, 1, 2]  # fewer: all of them
    with pytest.raises(ValueError, match="did not time the same seeds"):
        pick_checked([1, 2], [1, 3])


@pytest.mark.parametrize(("reply", "message"), [
    (ChildReply(True, values=[1, 2], times=[0.1], seeds=[5]),
     "1 times, 2 results and 1 seeds reported for the timed calls"),
    (ChildReply(True, values=[1], times=[0.1], seeds=[6]),
     "the timed calls did not use the seeds they were sent"),
    (ChildReply(True, values=[1], times=[-0.1], seeds=[5]),
     "a reported time is not a number of seconds"),
    (ChildReply(True, values=[1], times=["fast"], seeds=[5]),
     "a reported time is not a number of seconds"),
    (ChildReply(True, values=[], times=[], seeds=[]),
     "0 times, 0 results and 0 seeds reported for the timed calls"),
])
def test_a_timed_reply_that_does_not_add_up_is_refused(reply: ChildReply, message: str) -> None:
    assert _bad_timing(reply, [5, 6, 7]) == message
    assert _bad_timing(ChildReply(True, values=[1, 2], times=[0.1, 0.2], seeds=[5, 6]),
                       [5, 6, 7]) == ""


def _timed_demo() -> Any:
    from lab.exercises import load_exercise
    from tests.lab.conftest import HERE

    pytest.importorskip("torch")
    return load_exercise(HERE / "fixtures" / "timed_demo", module="tests.lab.fixtures.timed_demo")


@pytest.mark.slow
def test_a_grading_timed_on_the_device_clock_reports_medians_and_the_spread() -> None:
    from lab.grader.testing import assert_passes
    from tests.lab.conftest import SOLUTIONS

    run = assert_passes(_timed_demo(), SOLUTIONS / "timed" / "fast.py", event_timing=True)
    m = next(e for e in run.events if e["event"] == "metrics")["metrics"]
    rule = StopRule()
    assert m["samples"] >= 2 * rule.min_calls and m["reference_samples"] >= 2 * rule.min_calls
    assert m["flush_mb"] == gpu_timing.MIN_FLUSH_BYTES / 2**20
    assert 0 < m["median_ratio"] < 5 and m["learner_sem_pct"] >= 0
    assert "batch_calls" in m and m["batch_calls"] == 1  # one call per sample


@pytest.mark.slow
def test_a_solution_that_caches_its_answer_is_caught_on_its_timed_outputs() -> None:
    from lab.grader.testing import assert_fails
    from tests.lab.conftest import SOLUTIONS

    assert_fails(_timed_demo(), SOLUTIONS / "timed" / "caches.py", 1,
                 match=r"^while timing \(a run with seed \d+\): expected", kind="wrong",
                 event_timing=True)


def test_gpu_check_flags_a_reference_whose_self_timing_is_off() -> None:
    """scripts/gpu_check.py: the reference timed against itself must measure a ratio near 1."""
    import importlib.util
    from types import SimpleNamespace

    from tests.lab.conftest import HERE

    spec = importlib.util.spec_from_file_location(
        "gpu_check", HERE.parents[1] / "scripts" / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    gpu_check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_check)

    def level(*ratios: float) -> SimpleNamespace:
        return SimpleNamespace(results=[SimpleNamespace(
            case=SimpleNamespace(timed=True), metrics={"median_ratio": r,
                                                       "learner_sem_pct": 0.4})
            for r in ratios])

    assert gpu_check.self_timing(level(1.02)) == ("1.02 (0.4%)", False)
    assert gpu_check.self_timing(level(0.98, 1.7)) == ("0.98 (0.4%), 1.70! (0.4%)", True)
    assert gpu_check.self_timing(SimpleNamespace(results=[])) == ("-", False)
