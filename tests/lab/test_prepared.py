"""A child prepared ahead of its grading (`lab.grader.runner.prepare`: spawned, torch imported):
the next grading adopts it and only loads the learner's file, read at that moment."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from lab.exercises import load_exercise
from lab.grader.events import CaseFailed
from lab.grader.measure import Measurer
from lab.grader.runner import GradeOptions, grade, prepare
from lab.grader.spawn import Prepared
from tests.lab.conftest import HERE, SOLUTIONS

pytest.importorskip("torch")
TIMED = load_exercise(HERE / "fixtures" / "timed_demo", module="tests.lab.fixtures.timed_demo")
KV = HERE.parents[1] / "lab" / "exercises" / "kv_bytes"

pytestmark = pytest.mark.slow


def _stub(path: Path) -> Path:
    path.write_text("def square_sum(a):\n    raise NotImplementedError\n")
    return path


def test_an_adopted_child_loads_the_file_as_it_is_when_grading_starts(tmp_path: Path) -> None:
    solution = _stub(tmp_path / "timed_demo.py")
    prepared = prepare(TIMED, solution, GradeOptions(device="cpu", confine=False))
    assert prepared is not None
    prepared.wait()
    assert prepared.sandbox.ready and prepared.sandbox.alive  # warmed, no learner code yet
    shutil.copyfile(SOLUTIONS / "timed" / "fast.py", solution)  # edited after the prepare
    result = grade(TIMED, solution, GradeOptions(device="cpu", prepared=prepared,
                   timing_repeats=3, confine=False))
    assert result.passed  # the stub it was prepared beside would have failed
    assert result.sandboxes_started == 1  # the prepared child, not a second one
    assert not prepared.sandbox.alive  # closed with the grading


def test_a_stub_fails_through_a_prepared_child_like_a_cold_one(tmp_path: Path) -> None:
    solution = _stub(tmp_path / "timed_demo.py")
    prepared = prepare(TIMED, solution, GradeOptions(device="cpu", confine=False))
    assert prepared is not None
    result = grade(TIMED, solution, GradeOptions(
        device="cpu", prepared=prepared, confine=False))
    failures = [e for e in result.events if isinstance(e, CaseFailed)]
    assert not result.passed and failures
    assert failures[0].kind == "not_implemented"


def test_a_child_prepared_for_other_arguments_is_closed_not_adopted(tmp_path: Path) -> None:
    solution = _stub(tmp_path / "timed_demo.py")
    (tmp_path / "other").mkdir()
    other = _stub(tmp_path / "other" / "timed_demo.py")
    prepared = prepare(TIMED, other, GradeOptions(device="cpu", confine=False))  # another file
    assert prepared is not None
    result = grade(TIMED, solution, GradeOptions(
        device="cpu", prepared=prepared, confine=False))
    assert not prepared.sandbox.alive
    assert not result.passed and result.sandboxes_started == 1  # its own, fresh child


def test_nothing_is_prepared_where_nothing_would_be_gained_or_graded(tmp_path: Path) -> None:
    kv = load_exercise(KV)
    assert prepare(kv, _stub(tmp_path / "kv_bytes.py"), GradeOptions(
        device="cpu")) is None  # no torch
    assert prepare(TIMED, tmp_path / "missing.py", GradeOptions(device="cpu")) is None  # no file
    assert prepare(TIMED, _stub(tmp_path / "timed_demo.py"), GradeOptions(
        levels=[9], device="cpu")) is None


def test_a_matching_prepared_child_is_kept_and_any_other_replaced(tmp_path: Path) -> None:
    """`prepare(current=)`: asked again for the same grading (the TUI re-selecting a lab), the
    warm child is kept; for another file, or once a grading has used it, a fresh one starts."""
    solution = _stub(tmp_path / "timed_demo.py")
    first = prepare(TIMED, solution, GradeOptions(device="cpu", confine=False))
    assert first is not None
    assert prepare(TIMED, solution, GradeOptions(
        device="cpu", confine=False), current=first) is first
    first.wait()
    assert first.usable and first.exercise is TIMED
    (tmp_path / "other").mkdir()
    other = prepare(TIMED, _stub(tmp_path / "other" / "timed_demo.py"), GradeOptions(device="cpu",
                    confine=False), current=first)
    assert other is not None and other is not first and not first.sandbox.alive
    grade(TIMED, other.sandbox.solution, GradeOptions(device="cpu", prepared=other,
          confine=False))
    assert not other.usable  # its child ran a grading
    again = prepare(TIMED, other.sandbox.solution, GradeOptions(
        device="cpu", confine=False), current=other)
    assert again is not None and again is not other
    assert prepare(TIMED, tmp_path / "missing.py", GradeOptions(
        device="cpu"), current=again) is None
    assert not again.sandbox.alive  # nothing to grade: the warm child is not kept either


def test_a_judge_file_loaded_by_path_is_caught_in_a_prepared_child(tmp_path: Path) -> None:
    """The import scan of an adopted child uses where its warm-time modules resolve (looked up
    ahead); a module the learner's file loads by path is still resolved and caught."""
    judge = HERE / "fixtures" / "timed_demo" / "grading.py"
    solution = tmp_path / "timed_demo.py"
    solution.write_text(
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('judge', {str(judge)!r})\n"
        "judge = importlib.util.module_from_spec(spec)\n"
        "sys.modules['judge'] = judge\n"
        "spec.loader.exec_module(judge)\n"
        + (SOLUTIONS / "timed" / "fast.py").read_text())
    prepared = prepare(TIMED, solution, GradeOptions(device="cpu", confine=False))
    assert prepared is not None
    result = grade(TIMED, solution, GradeOptions(
        device="cpu", prepared=prepared, confine=False))
    failures = [e for e in result.events if isinstance(e, CaseFailed)]
    assert not result.passed and failures
    assert failures[0].kind == "forbidden_import" and "imports judge" in failures[0].message
    assert result.sandboxes_started == 1  # it was the prepared child that caught it


def test_the_reference_timing_child_is_warmed_behind_the_learners_and_adopted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A level with a timed case (spec-verify 3): the reference's child is spawned and warmed
    once the learner's is ready, and the grading's timed case loads the reference into that
    very child (no fresh spawn, whose torch import the learner would otherwise wait for); the
    grading closes it. (The fixture exercise cannot show it: its reference is not where the
    convention guesses, so its prepared children are replaced.)"""
    from lab.exercises import get
    from lab.grader.testing import reference_as_solution

    exercise = get("spec-verify")
    solution = reference_as_solution(exercise, tmp_path)
    prepared = prepare(exercise, solution, GradeOptions(levels=[3], device="cpu"))
    assert prepared is not None
    prepared.wait()
    assert prepared.reference_thread is not None
    prepared.reference_thread.join()
    ref = prepared.reference
    assert ref is not None and ref.ready and ref.alive and ref.spawned == 1
    ops: list[str] = []
    batches: dict[str, list[object]] = {"reference": [], "learner": []}

    def counting(child: Any, who: str) -> None:
        request = child.request

        def counted(msg: dict[str, object], *args: object, **kwargs: object) -> object:
            if who == "reference":
                ops.append(str(msg.get("op")))
            if msg.get("op") == "batch":
                batches[who].append(msg["seeds"])
            return request(msg, *args, **kwargs)

        child.request = counted

    counting(ref, "reference")
    counting(prepared.sandbox, "learner")
    warm_ups: list[bool] = []
    calibrate = Measurer._calibrate

    def spied(self: Any, child: Any, case: Any, warm_up: bool = True) -> Any:
        warm_ups.append(warm_up)
        return calibrate(self, child, case, warm_up=warm_up)

    monkeypatch.setattr(Measurer, "_calibrate", spied)
    result = grade(exercise, solution, GradeOptions(levels=[3], device="cpu", seed=1,
                   prepared=prepared))
    assert result.passed, [e for e in result.events if isinstance(e, CaseFailed)]
    assert "load" in ops and ops.count("batch") >= 4  # the timed case ran in `ref`
    assert ref.spawned == 1  # loaded as it was, not respawned
    assert not ref.alive  # closed with the grading
    # the timed case ran once ahead in `ref` (one call); neither side then pays a discarded
    # warm-up call before calibrating
    assert len(batches["reference"][0]) == 1 and warm_ups == [False, False]
    # every timed call has its own seed, drawn per batch (never one seen before)
    for who in ("reference", "learner"):
        seeds = [seed for batch in batches[who] for seed in batch]  # type: ignore[attr-defined]
        assert seeds and len(set(seeds)) == len(seeds), who


def test_no_reference_child_is_prepared_for_levels_without_a_timed_case(tmp_path: Path) -> None:
    from lab.exercises import get

    prepared = prepare(get("spec-verify"), _stub(tmp_path / "spec_verify.py"), GradeOptions(
        levels=[1], device="cpu", confine=False))
    assert prepared is not None
    prepared.wait()
    assert prepared.reference_thread is None and prepared.reference is None
    prepared.close()
    assert not prepared.sandbox.alive


def test_closing_on_the_way_out_waits_for_the_child_not_for_this_processs_imports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`dojo lab watch` stopped by Ctrl-C while the next grading is prepared (close(leaving=True)):
    the child is killed and its folder removed, and the grader's own imports (torch,
    transformers: 4-9 s at load) are left to their daemon thread instead of being awaited."""
    release = threading.Event()
    monkeypatch.setattr(Prepared, "_import", lambda self: release.wait(120))  # imports never end
    prepared = prepare(TIMED, _stub(tmp_path / "timed_demo.py"),
                       GradeOptions(device="cpu", confine=False))
    assert prepared is not None
    try:
        closing = threading.Thread(target=prepared.close, kwargs={"leaving": True},
                                   daemon=True)
        closing.start()
        closing.join(60)  # a bound: the child's kill and removal take well under a second
        assert not closing.is_alive(), "close() waited for this process's imports"
        assert prepared.imports.is_alive() and not prepared.sandbox.alive
    finally:
        release.set()


def test_a_close_before_the_warm_up_started_its_child_does_not_wait_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app gives `dojo lab serve` 5 s after SIGTERM, then SIGKILLs it. A close that came
    while the warm-up thread had not yet started its child found nothing to kill and waited
    for the whole warm-up (a torch import: 3-10 s at load), was cut off, and left the child's
    folder (a close once the child runs kills it: its warm-up request ends at once). Here
    the warm-up's import never ends; close() must not wait for it, nor start the child."""
    from lab.grader.isolation import Sandbox

    warm = Sandbox.prepare
    holder: list[Prepared] = []

    def hanging(self: Sandbox, device: str | None = None) -> Any:
        self.load = {**self.load, "drive": "tests.lab.fixtures.hanging_drive"}
        self.read_also = [*self.read_also, str(HERE.parent)]  # the confined child sees tests/
        while not (holder and holder[0].closed.is_set()):  # the close comes first
            threading.Event().wait(0.01)
        return warm(self, device)

    monkeypatch.setattr(Sandbox, "prepare", hanging)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    prepared = prepare(TIMED, _stub(tmp_path / "timed_demo.py"), GradeOptions(device="cpu"))
    assert prepared is not None
    holder.append(prepared)
    sandbox = prepared.sandbox
    closing = threading.Thread(target=prepared.close, daemon=True)
    closing.start()
    closing.join(30)  # the warm-up's own limit is 120 s: a close that waits for it fails here
    assert not closing.is_alive(), "close() waited for the warm-up"
    assert not prepared.thread.is_alive() and sandbox.proc is None and sandbox.spawned == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("dojo-")] == []
