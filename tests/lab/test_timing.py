"""Timed cases: interleaved learner/reference runs, medians reported as ratios, gates enforced;
torch runs in the sandbox under the memory limit with one thread on CPU."""

from __future__ import annotations

import os
import time

import pytest

from lab.exercises import load_exercise
from lab.grader.isolation import cpu_s
from lab.grader.measure import check_gate
from lab.grader.testing import assert_fails, assert_passes
from lab.grader.timing import (
    BATCH_TARGET_S,
    MAX_BATCH,
    MIN_CPU_S,
    clearly_over,
    matched_batches,
    next_batch_size,
    p95,
    summarize,
)
from tests.lab.conftest import HERE, SOLUTIONS

pytest.importorskip("torch")
TIMED = load_exercise(HERE / "fixtures" / "timed_demo", module="tests.lab.fixtures.timed_demo")


def test_summary_ratios_and_nearest_rank_p95() -> None:
    m = summarize([2.0, 4.0, 3.0], [1.0, 1.0, 2.0])
    assert m["median_ratio"] == 3.0 and m["p95_ratio"] == 2.0
    assert m["learner_median_ms"] == 3000.0 and m["samples"] == 3
    assert p95(list(range(1, 21))) == 19


def test_ratios_are_per_call_when_each_side_has_its_own_batch_size() -> None:
    """A learner batch of 1 call lasting 2 s against reference batches of 4 calls lasting 1 s:
    0.25 s per reference call, so 8x (not the 2x a ratio of batch times would say)."""
    m = summarize([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], learner_calls=1, reference_calls=4)
    assert m["median_ratio"] == 8.0 and m["reference_median_ms"] == 250.0
    assert m["learner_batch_calls"] == 1 and m["batch_calls"] == 4


def test_batches_are_matched_to_last_as_long_as_the_longer_side() -> None:
    """A 1 s learner call beside 20 ms reference calls: 50 reference calls per batch, so a load
    spike cannot inflate one short side alone; the learner never gets more calls than the
    reference (each of its values is checked); MAX_BATCH caps both."""
    assert matched_batches({"learner": 1, "reference": 5},
                           {"learner": 1.0, "reference": 0.02}) == {"learner": 1, "reference": 50}
    assert matched_batches({"learner": 10, "reference": 5},
                           {"learner": 0.01, "reference": 0.02}) == {"learner": 10,
                                                                     "reference": 10}
    assert matched_batches({"learner": 1, "reference": 1},
                           {"learner": 0.15, "reference": 0.12}) == {"learner": 1, "reference": 2}
    huge = matched_batches({"learner": 1, "reference": 1}, {"learner": 60.0, "reference": 1e-6})
    assert huge == {"learner": 1, "reference": MAX_BATCH}


def test_calibration_grows_a_batch_to_just_past_the_target() -> None:
    """A probe at or over the target ends calibration; one just short grows by the missing
    share plus headroom (4 calls of 96 ms -> 5, not a doubling to 8 that would make every timed
    batch of the case twice as long); a short probe still grows by at least one call; a
    latency-sized probe jumps (re-measured next), capped at MAX_BATCH."""
    assert next_batch_size(4, BATCH_TARGET_S) is None
    assert next_batch_size(4, 0.2) is None
    assert next_batch_size(MAX_BATCH, 0.001) is None
    assert next_batch_size(4, 0.096) == 5
    assert next_batch_size(100, BATCH_TARGET_S * 0.999) == 116
    assert next_batch_size(1, BATCH_TARGET_S * 0.999) == 2
    assert next_batch_size(1, 0.027) == 5
    assert next_batch_size(1, 0.0) == MAX_BATCH
    assert next_batch_size(1, 0.001) == 115
    grown = next_batch_size(8, 0.05)
    assert grown is not None and grown * 0.05 / 8 > BATCH_TARGET_S


def test_cpu_time_ratios_and_the_gate_holds_both() -> None:
    m = summarize([1.0] * 3, [1.0] * 3, learner_cpu=[0.9] * 3, reference_cpu=[0.1] * 3)
    assert m["median_ratio"] == 1.0 and m["cpu_median_ratio"] == pytest.approx(9.0)
    assert check_gate({"median_ratio_max": 5.0}, m) == (
        "median_ratio 9.00 > 5 in CPU time (wall clock 1.00: a busy machine)")
    coarse = summarize([1.0], [1.0], learner_cpu=[0.5], reference_cpu=[MIN_CPU_S / 2])
    assert "cpu_median_ratio" not in coarse  # a few clock ticks are not divided by
    assert check_gate({"median_ratio_max": 5.0}, {"median_ratio": 6.0,
                                                  "cpu_median_ratio": 1.0}) == (
        "median_ratio 6.00 > 5")  # the wall clock alone can fail a solution too


def test_a_learner_far_past_the_gate_is_judged_from_calibration() -> None:
    """2.5x past the gate in both clocks: no interleaved batch could bring it back under, so
    the calibration's figures stand (and fail the gate); anything nearer is measured."""
    gate = {"median_ratio_max": 15.0, "p95_ratio_max": 20.0}
    ref = {"reference": 0.02}
    figures = clearly_over(gate, {"learner": 0.8, **ref}, {"learner": 0.8, **ref}, 0.1)
    assert figures is not None and figures["median_ratio"] == pytest.approx(40.0)
    assert check_gate(gate, figures) == "median_ratio 40.00 > 15, p95_ratio 40.00 > 20"
    assert clearly_over(gate, {"learner": 0.7, **ref}, {"learner": 0.8, **ref}, 0.1) is None
    # a busy machine inflates the wall clock: CPU time must say it too
    assert clearly_over(gate, {"learner": 0.8, **ref}, {"learner": 0.3, **ref}, 0.1) is None
    # too few clock ticks on the reference's side to divide by
    assert clearly_over(gate, {"learner": 0.8, **ref}, {"learner": 0.8, **ref},
                        MIN_CPU_S / 2) is None
    assert clearly_over({"acceptance_min": 0.5}, {"learner": 9.0, **ref},
                        {"learner": 9.0, **ref}, 0.1) is None


def test_cpu_seconds_are_read_from_the_kernel() -> None:
    before = cpu_s(os.getpid())
    deadline = time.process_time() + 0.1
    while time.process_time() < deadline:
        pass
    assert cpu_s(os.getpid()) - before >= 0.05
    assert cpu_s(2**22 + 12345) == 0.0  # no such process


def test_gate_bounds() -> None:
    assert check_gate({"median_ratio_max": 1.5}, {"median_ratio": 1.2}) == ""
    assert check_gate({"median_ratio_max": 1.5}, {"median_ratio": 1.8}) == "median_ratio 1.80 > 1.5"
    assert check_gate({"acceptance_min": 0.5}, {"acceptance": 0.4}) == "acceptance 0.40 < 0.5"
    assert check_gate({"p95_ratio_max": 1.5}, {}) == ""  # untimed cases are not gated


@pytest.mark.slow
def test_fast_solution_passes_with_ratio_reported_and_one_thread() -> None:
    run = assert_passes(TIMED, SOLUTIONS / "timed" / "fast.py", timing_repeats=5)
    metrics = [e for e in run.events if e["event"] == "metrics"]
    assert len(metrics) == 1 and metrics[0]["case"] == "matmul"
    m = metrics[0]["metrics"]
    assert m["samples"] == 5 and 0 < m["median_ratio"] < 5
    summary = next(e for e in run.events if e["event"] == "level_summary")
    assert summary["metrics"]["median_ratio"] == m["median_ratio"]


@pytest.mark.slow
def test_slow_solution_fails_the_speed_gate() -> None:
    run = assert_fails(TIMED, SOLUTIONS / "timed" / "slow.py", 1,
                       match=r"correct, but too slow for this level: median_ratio \d+\.\d+ > 5",
                       kind="gate", timing_repeats=3)
    failed = run.failures[0]
    m = failed["metrics"]
    assert m["learner_median_ms"] >= 50
    # each side's batch lasts >= 100 ms: the 50 ms learner needs 2-3 calls, the ~1 ms reference
    # many more; the learner's batch never outgrows the reference's (each value is checked)
    assert 2 <= m["learner_batch_calls"] < m["batch_calls"]


def test_cuda_request_without_cuda_is_a_usage_error() -> None:
    import torch

    from lab.grader.runner import GradeOptions, UsageError, grade

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(UsageError, match=r"--device cuda: torch.cuda.is_available\(\) is False"):
        grade(TIMED, SOLUTIONS / "timed" / "fast.py", GradeOptions(device="cuda"))
