"""`timed_once` cases: a case that lasts seconds is timed by its one graded call, beside the
reference's call of the same case in the reference's own child; that call is also the answer
the learner's value is checked against."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.exercises import load_exercise
from lab.grader.events import Metrics
from lab.grader.report import TextReport
from lab.grader.testing import assert_fails, assert_passes, only_cases
from tests.lab.conftest import HERE, SOLUTIONS

ONCE = load_exercise(HERE / "fixtures" / "once_demo", module="tests.lab.fixtures.once_demo")
SOLVED = SOLUTIONS / "once"


@pytest.mark.slow
def test_a_fast_solution_is_timed_by_one_call_each_side_and_passes() -> None:
    run = assert_passes(ONCE, SOLVED / "fast.py", seed=5)
    metrics = [e for e in run.events if e["event"] == "metrics"]
    assert [e["case"] for e in metrics] == ["long"]
    m = metrics[0]["metrics"]
    assert m["samples"] == 1 and m["batch_calls"] == 1 and m["learner_batch_calls"] == 1
    assert 0 < m["median_ratio"] < 3 and "cpu_median_ratio" in m
    lines: list[str] = []
    TextReport(lines.append)(Metrics(level=1, case="long", metrics=m))
    assert lines and "one run each, side by side" in lines[0] and "in CPU time" in lines[0]


@pytest.mark.slow
def test_a_slower_call_is_compared_with_the_reference_run_back_to_back_beside_it(
        tmp_path: Path) -> None:
    """The reference's one call used to end long before a slow learner's, which then
    ran alone on a quieter machine (a 4.3x ledger measured under the 4x gate). The reference now
    runs again and again until the learner's call returns, and its median is the yardstick."""
    path = tmp_path / "once_demo.py"
    path.write_text((SOLVED / "slow.py").read_text().replace("range(20)", "range(2)"))
    run = assert_passes(ONCE, path, seed=5)
    m = next(e for e in run.events if e["event"] == "metrics")["metrics"]
    # Normally 2+ runs; 1 when the reference's child started later than one reference run's
    # time (a loaded machine): then nothing is left to run beside the learner's call. The ratio
    # is the check that the learner's 2x call was measured against the reference's, not alone.
    assert m["reference_runs"] >= 1 and 1.2 < m["median_ratio"] < 6
    lines: list[str] = []
    TextReport(lines.append)(Metrics(level=1, case="long", metrics=m))
    runs = int(m["reference_runs"])
    assert (f"the median of {runs} reference runs" if runs > 1 else "one run each") in lines[0]


@pytest.mark.slow
def test_twenty_times_the_work_is_stopped_at_the_gate_once_the_reference_is_done() -> None:
    run = assert_fails(ONCE, SOLVED / "slow.py", 1,
                       match=r"too slow for this level: stopped after \d+\.\d s, over 6× the "
                             r"reference's \d+\.\d\d s .* \(your result was not checked\)",
                       kind="gate")
    failed = run.failures[0]
    assert failed["case"] == "long" and [f["case"] for f in run.failures] == ["long"]
    m = failed["metrics"]
    # killed at 6 x 1.05 the reference's time: what it had run is the least it would have taken
    assert m["stopped_after_ms"] == pytest.approx(6 * 1.05 * m["reference_median_ms"])
    # the killed child is replaced: the case after it runs and passes
    passed = [e["case"] for e in run.events if e["event"] == "case_passed"]
    assert passed == ["small", "tail"]


@pytest.mark.slow
def test_alone_the_slow_call_is_waited_for_and_fails_the_gate_on_its_ratio() -> None:
    # the timed case first: nothing has passed, so the reference runs after it, not beside it
    run = assert_fails(only_cases(ONCE, "long"), SOLVED / "slow.py", 1,
                       match=r"correct, but too slow for this level: median_ratio \d+\.\d+ > 6",
                       kind="gate")
    m = run.failures[0]["metrics"]
    assert m["samples"] == 1 and m["cpu_median_ratio"] > 6


@pytest.mark.slow
def test_a_wrong_long_answer_is_checked_against_the_reference_child() -> None:
    # the reference's value comes from its child (the parent computes nothing for this case)
    run = assert_fails(ONCE, SOLVED / "wrong_long.py", 1, match=r"expected \d+, got \d+",
                       kind="wrong")
    failed = run.failures[0]
    assert failed["case"] == "long" and int(failed["got"]) == int(failed["expected"]) + 1
    assert not [e for e in run.events if e["event"] == "metrics"]  # a wrong answer is not timed


@pytest.mark.slow
@pytest.mark.parametrize("alone", [False, True])
def test_a_learner_that_dies_in_the_timed_case_is_reported_as_such(alone: bool) -> None:
    # alone: the timed case first (nothing passed yet), so the reference is not run beside it
    exercise = only_cases(ONCE, "long") if alone else ONCE
    run = assert_fails(exercise, SOLVED / "dies_long.py", 1, match=r"exit|died|status 3",
                       kind=None)
    assert run.failures[0]["case"] == "long"
    assert run.failures[0]["kind"] in {"crash", "exit"}
