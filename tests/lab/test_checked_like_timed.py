"""A solution cannot tell its checked call from a timed one, or gains nothing if it can.

The graded call's seed is drawn from the same range as the timed calls' (hashed from the replay
seed: `plan.checked_seed`); every request (`run`, `batch`, the device clock's `timed`) calls the
learner's code through one driver, from the same line, with the same context; what still differs
(the request in the callers' locals, the order of calls, the gaps between them) only leads to
a cheat on timed calls, and every timed output is checked. The hostile files are in
tests/lab/solutions/tells/."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from lab.grader import gpu_timing
from lab.grader.api import Case, RunContext
from lab.grader.children import Children
from lab.grader.plan import SEED_BITS, checked_seed
from lab.grader.sandbox import Child
from tests.lab.conftest import HERE, SOLUTIONS

TELLS = SOLUTIONS / "tells"


def test_the_checked_seed_is_uniform_over_the_timed_range_and_replays() -> None:
    """Kolmogorov-Smirnov distance of 4000 checked seeds (replay seeds 0..3999, as small as
    replay seeds get) from the uniform law on [0, 2^31), the timed seeds' law: under 0.03
    (the replay seed itself would be at distance ~1)."""
    case = Case("c", 2, {})
    seeds = sorted(checked_seed(s, case) for s in range(4000))
    top = 2**SEED_BITS
    assert seeds[0] >= 0 and seeds[-1] < top
    distance = max(max((i + 1) / len(seeds) - s / top, s / top - i / len(seeds))
                   for i, s in enumerate(seeds))
    assert distance < 0.03, distance
    assert checked_seed(7, case) == checked_seed(7, Case("c", 2, {"other": 1}))  # replays
    others = {checked_seed(7, Case("d", 2, {})), checked_seed(7, Case("c", 3, {})),
              checked_seed(8, case)}
    assert checked_seed(7, case) not in others and len(others) == 3  # each case its own


class _Recorder:
    """The learner's module: records, at each call, its callers (file, function, line), the
    locals of the driver's frame that are not per-call, and the seed it was called with."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []

    def f(self, seed: int) -> int:
        frame = sys._getframe(1)
        stack = []
        while frame is not None and frame.f_code.co_filename != __file__:
            stack.append((frame.f_code.co_filename, frame.f_code.co_name, frame.f_lineno))
            frame = frame.f_back
        calls = next(f for f in _frames() if f.f_code.co_name == "calls")
        self.seen.append((tuple(stack), calls.f_locals["ctx"], seed))
        return seed


def _frames() -> list[Any]:
    frame, out = sys._getframe(), []
    while frame is not None:
        out.append(frame)
        frame = frame.f_back
    return out


def _drive() -> ModuleType:
    drive = ModuleType("recording_drive")
    exec("def run(solution, case, ctx):\n    return solution.f(ctx.seed)\n", drive.__dict__)
    return drive


def _answer(child: Child, msg: dict[str, Any]) -> None:
    reply = child.handle(msg)  # every request from this one line: same frames below it
    assert reply


@pytest.mark.parametrize("device_clock", [False, True])
def test_checked_and_timed_calls_see_the_same_callers_and_context(device_clock: bool) -> None:
    """The child's own request handler, in process: the graded call (`run`), a stopwatch batch
    and (device_clock) a device-clock request with a warm-up call each call the learner's
    function through identical frames, with an identical context, each on its own seed."""
    recorder = _Recorder()
    child = Child()
    child.drive, child.solution = _drive(), SimpleNamespace(f=recorder.f)
    case, ctx = Case("c", 1, {}, timed=True), RunContext(device="cpu", seed=checked_seed(3, Case(
        "c", 1, {})))
    timed = "timed" if device_clock else "batch"
    rule = gpu_timing.StopRule(min_calls=3, max_calls=3).to_wire()
    for msg in (Children.message("run", case, ctx),
                Children.message(timed, case, ctx, [11, 12, 13, 14], warmup=1,
                                 flush_bytes=1024, rule=rule)):
        _answer(child, msg)
    stacks = {stack for stack, _, _ in recorder.seen}
    contexts = [c for _, c, _ in recorder.seen]
    assert [seed for _, _, seed in recorder.seen] == [ctx.seed, 11, 12, 13, 14]
    assert len(stacks) == 1, stacks
    assert all(c == contexts[0] for c in contexts) and contexts[0]["seed"] == 0
    names = [name for _, name, _ in next(iter(stacks))]
    assert names[:3] == ["run", "call", "timed_calls"] and "calls" in names


def _timed_demo() -> Any:
    pytest.importorskip("torch")
    from lab.exercises import load_exercise

    return load_exercise(HERE / "fixtures" / "timed_demo", module="tests.lab.fixtures.timed_demo")


def _grade(name: str, tmp_path: Path, **options: Any) -> Any:
    from lab.grader.testing import grade_file

    path = tmp_path / "timed_demo.py"
    path.write_text((TELLS / name).read_text())
    return grade_file(_timed_demo(), path, 1, timing_repeats=3, **options)


def _failure(run: Any) -> dict[str, Any]:
    assert not run.result.passed
    failed = [f for f in run.failures if f["required"]]
    assert [f["case"] for f in failed] == ["matmul"], run.describe()
    return failed[0]


@pytest.mark.slow
def test_a_file_that_trusts_a_small_seed_takes_its_graded_call_for_a_timed_one(
        tmp_path: Path) -> None:
    """Before: the graded call ran on the replay seed (< 10^6), so this file was right when
    checked and skipped the work when timed. Now it fails the graded call itself."""
    failed = _failure(_grade("by_seed.py", tmp_path))
    assert failed["kind"] == "wrong" and "while timing" not in failed["message"], failed


@pytest.mark.slow
@pytest.mark.parametrize("event_timing", [False, True])
def test_a_file_that_compares_its_surroundings_finds_no_difference(
        tmp_path: Path, event_timing: bool) -> None:
    """Stack, depth, pid, cwd, argv, environment, threads, limits: a timed call looks like the
    graded one, on the grader's stopwatch and on the device clock (its CPU stand-in), so the
    file never skips the work and passes (before, the device clock's frames differed)."""
    run = _grade("by_surroundings.py", tmp_path, event_timing=event_timing)
    assert run.result.passed, run.describe()


@pytest.mark.slow
@pytest.mark.parametrize(("name", "event_timing"), [
    ("by_request.py", False), ("by_request.py", True), ("by_gap.py", False)])
def test_a_file_that_can_tell_fails_on_its_timed_outputs(tmp_path: Path, name: str,
                                                         event_timing: bool) -> None:
    """The request in its callers' locals, or the gap since its last call: these tell a timed
    call, and skipping the work there fails, because every timed output is checked (the
    device clock checks a random subset, drawn after the calls)."""
    failed = _failure(_grade(name, tmp_path, event_timing=event_timing))
    assert failed["kind"] == "wrong", failed
    assert failed["message"].startswith("while timing (a run with seed "), failed


@pytest.mark.parametrize("own_models", [False, True])
def test_the_expected_value_is_computed_on_the_graded_calls_seed(own_models: bool) -> None:
    """The reference's answer of a case, in the grader or (the learner's own checkpoints) in the
    models child, is computed with the case's checked seed, the one the learner's graded call
    ran on; with the replay seed, an answer drawn from `ctx.seed` differed (spec-verify L4's
    timed case failed the reference under --target/--draft)."""
    from lab.grader import runner
    from lab.grader.isolation import ChildReply

    seen: list[int] = []

    class Models:
        def expected(self, case: Case, grading: str, ctx: RunContext) -> ChildReply:
            seen.append(ctx.seed)
            return ChildReply(True, value=ctx.seed)

    run = object.__new__(runner._Run)
    run.ctx, run.seed, run.device = RunContext(device="cpu", seed=5), 5, "cpu"
    run.exercise = SimpleNamespace(module="m", needs_torch=False)
    run.own_models = {"target": "/t"} if own_models else {}
    run.children = Models()  # type: ignore[assignment]
    run.cache, run.fixed = None, set()

    def expected(case: Case, ctx: RunContext) -> int:
        seen.append(ctx.seed)
        return ctx.seed

    run.grading = SimpleNamespace(expected=expected)
    case = Case("c", 4, {})
    assert run._expected(case) == (True, checked_seed(5, case))
    assert seen == [checked_seed(5, case)]


def test_the_models_child_is_sent_the_context_it_is_given() -> None:
    """`Children.expected` asks the models child for the case on the context it is given (the
    case's), not the run's."""
    import math
    import threading

    from lab.grader.isolation import ChildReply

    sent: list[dict[str, Any]] = []

    class Child:
        alive, cancelled = True, None

        def request(self, msg: dict[str, Any], timeout: float) -> ChildReply:
            sent.append(msg)
            return ChildReply(True, value=1)

    children = object.__new__(Children)
    children.ctx = RunContext(device="cpu", seed=5)
    children.models_sandbox, children.models_failure = Child(), None  # type: ignore[assignment]
    children._models_lock = threading.Lock()
    children.case_timeout_s, children.deadline = None, math.inf
    case = Case("c", 4, {})
    assert children.expected(case, "g", RunContext(device="cpu", seed=123)).ok
    assert sent[0]["ctx"]["seed"] == 123 and sent[0]["case"]["id"] == "c"
