"""sampling tests: paths and an in-process grader (no sandbox) for speed.

`grade_in_process` runs the exercise's own drive/check on a level's cases; the platform path (the
real sandbox) is covered by test_grading.py for the reference, the stub and a few broken files.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType

os.environ.setdefault("OMP_NUM_THREADS", "1")

from tests import mutants
from tests.answers import answer
from tests.mutants import load_solution

HERE = Path(__file__).resolve().parent
BROKEN = HERE / "broken"
SOLUTIONS = HERE / "solutions"


def materialize(broken: Path, directory: Path) -> Path:
    """A broken file as a standalone `sampling.py` in `directory` (tests/mutants.py)."""
    return mutants.materialize(broken, directory / "sampling.py")


def grade_in_process(path: Path | ModuleType, level: int, seed: int = 1234,
                     only: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(case id, message) for every failed required case of `level` (untimed; `only`: case ids
    starting with one of these prefixes)."""
    from lab.exercises.sampling import drive, grading
    from lab.grader.api import RunContext

    reference = importlib.import_module(grading.REFERENCE)
    solution = path if isinstance(path, ModuleType) else load_solution(path)
    ctx = RunContext(device="cpu", seed=seed)
    failures = []
    for case in grading.cases(level, seed):
        if only and not case.id.startswith(only):
            continue
        expected = answer("sampling", case, seed, lambda c: drive.run(reference, c, ctx))
        try:
            got = drive.run(solution, case, ctx)
        except Exception as exc:  # the learner's exception is a failed case too
            failures.append((case.id, f"{type(exc).__name__}: {exc}"))
            continue
        verdict = grading.check(case, got, expected)
        if not verdict.passed and case.required:
            failures.append((case.id, verdict.message))
    return failures
