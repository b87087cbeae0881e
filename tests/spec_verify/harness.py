"""Grade a solution module in-process with the exercise's cases/drive/expected/check (fast path).

The platform's `dojo lab grade` runs `drive.run` in a sandbox child and `grading.expected` /
`grading.check` in the parent; these tests exercise the grading logic itself, so they call the
same functions directly and stop at the first failing case.
"""

from __future__ import annotations

import importlib.util
from functools import partial
from pathlib import Path
from types import ModuleType

from lab.exercises import get as get_exercise
from lab.exercises.spec_verify import drive, grading
from lab.grader.api import Case, RunContext, Verdict
from lab.grader.measure import check_gate
from lab.grader.timing import summarize, time_calls

BROKEN_DIR = Path(__file__).parent / "broken"
REFERENCE_FILE = Path(__file__).resolve().parents[2] / "lab" / "reference" / "spec_verify.py"
CTX = RunContext(device="cpu", seed=0)
_expected: dict[tuple[str, int], object] = {}


def load(path: Path, name: str | None = None) -> ModuleType:
    """Import a file as a learner module (a fresh module, not `lab.reference.*`)."""
    spec = importlib.util.spec_from_file_location(name or f"learner_{path.stem}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def reference() -> ModuleType:
    return importlib.import_module(grading.REFERENCE)


def expected(case: Case, seed: int) -> object:
    key = (case.id, seed)
    if key not in _expected:
        _expected[key] = grading.expected(case, CTX)
    return _expected[key]


def grade(solution: ModuleType, level: int, *, seed: int = 0, only: str | None = None,
          skip: tuple[str, ...] = (), fail_fast: bool = True) -> list[tuple[Case, Verdict]]:
    """Run the level's cases (ids containing `only`, none containing a `skip` entry)."""
    results: list[tuple[Case, Verdict]] = []
    for case in grading.cases(level, seed):
        if (only and only not in case.id) or any(s in case.id for s in skip):
            continue
        try:
            got = drive.run(solution, case, CTX)
        except Exception as exc:  # the platform reports a crash as a failed case
            results.append((case, Verdict(False, f"crashed: {type(exc).__name__}: {exc}")))
        else:
            verdict = grading.check(case, got, expected(case, seed))
            if verdict.passed and case.timed:
                verdict = _gated(solution, case, verdict)
            results.append((case, verdict))
        if fail_fast and not results[-1][1].passed:
            break
    return results


def _gated(solution: ModuleType, case: Case, verdict: Verdict) -> Verdict:
    """The platform's timing and level gate, in-process: warm-up, then interleaved runs of the
    solution and the reference; a missed bound fails the case as `dojo lab grade` does."""
    exercise = get_exercise("spec-verify")
    gate = exercise.level(case.level).gate
    if not gate:
        return verdict
    mine: list[float] = []
    ref: list[float] = []
    for i in range(exercise.timing_warmup + exercise.timing_repeats):
        for who in ((solution, reference()) if i % 2 == 0 else (reference(), solution)):
            durations = time_calls(partial(drive.run, who, case, CTX), CTX.device, 1)
            if i >= exercise.timing_warmup:
                (mine if who is solution else ref).extend(durations)
    metrics = summarize(mine, ref)
    missed = check_gate(gate, metrics)
    if missed:
        return Verdict(False, f"correct, but too slow for this level: {missed}", metrics)
    return Verdict(True, verdict.message, {**verdict.metrics, **metrics})
