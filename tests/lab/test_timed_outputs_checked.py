"""In every shipped exercise, a solution that can tell a timed call from its graded one
gains nothing by skipping the work there, because every timed output is checked.

The grader's stopwatch checks each output of the learner's batches against the reference
child's output for the same seed with the exercise's own `check` (`Measurer._check_batch`; the
device clock: a random subset). That only has teeth if a call's answer depends on its seed: a
reference answer for another timed call's seed (what a cache or a skipped call returns) must be
refused by `check` against this seed's. A `timed_once` case has no timed call apart from its
graded one, which is checked as every graded call is."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import pytest

from lab.exercises import discover, get
from lab.grader import codec
from lab.grader.api import Case, RunContext
from lab.grader.plan import timed_seeds

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

# (exercise, level, case): every timed case of the shipped exercises (the last test keeps this
# list equal to what the exercises define)
TIMED = [("meter", 4, "million-events"), ("paged-kv", 4, "gather-timed"),
         ("sampling", 2, "L2-timed-top-p"), ("sampling", 2, "L2-timed-history"),
         ("spec-verify", 3, "L3-large-vocab"),
         ("spec-verify", 4, "L4-shipped-timed")]


def _case(exercise: str, level: int, case_id: str) -> Case:
    grading = get(exercise).grading()
    return next(c for c in grading.cases(level, 7) if c.id == case_id)


def _reference_answer(exercise: str, case: Case, seed: int) -> Any:
    """What the reference's timing child answers for `seed`, as it reaches the grader."""
    ex = get(exercise)
    drive = importlib.import_module(f"{ex.module}.drive")
    reference = importlib.import_module(ex.grading().REFERENCE)
    ctx = RunContext(device="cpu", seed=seed, dtype=ex.dtype, model_paths=ex.model_paths)
    return codec.roundtrip(drive.run(reference, case, ctx))


@pytest.mark.parametrize(("exercise", "level", "case_id"), TIMED,
                         ids=[f"{e}-{c}" for e, _, c in TIMED])
def test_an_answer_for_another_timed_call_is_refused(exercise: str, level: int,
                                                     case_id: str) -> None:
    case = _case(exercise, level, case_id)
    assert case.timed
    if case.timed_once:  # its one call is graded (checked) and timed at once
        return
    check = get(exercise).grading().check
    this, other = timed_seeds(2)
    want = _reference_answer(exercise, case, this)
    assert check(case, want, want).passed
    stale = _reference_answer(exercise, case, other)
    verdict = check(case, stale, want)
    assert not verdict.passed, f"{exercise} {case_id}: an answer for seed {other} passed " \
                               f"the check for seed {this}"
    assert verdict.message


def test_the_list_holds_every_timed_case() -> None:
    found = sorted((ex.id, n, c.id) for ex in discover() if not ex.unavailable()
                   for n in ex.level_numbers for c in ex.grading().cases(n, 7) if c.timed)
    assert found == sorted(TIMED)


def test_a_case_whose_calls_ignore_their_seed_is_caught_here() -> None:
    """The teeth of the check above: a timed case whose drive draws the same inputs on every
    call (the seed not used) gives the same answer to every seed, so the stale answer passes."""
    case = _case("paged-kv", 4, "gather-timed")
    fixed = dataclasses.replace(case, timed=False)  # the drive varies only timed calls' inputs
    check = get("paged-kv").grading().check
    a, b = (_reference_answer("paged-kv", fixed, s) for s in timed_seeds(2))
    assert check(fixed, a, b).passed
