"""tensor-parallel tests: load a solution file, and grade a level in process (the drive's ranks
are real processes either way; the platform path through the sandbox is in test_grading.py)."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

os.environ.setdefault("OMP_NUM_THREADS", "1")

from tests import mutants
from tests.mutants import load_solution

HERE = Path(__file__).resolve().parent
BROKEN = HERE / "broken"


def materialize(broken: Path, directory: Path) -> Path:
    """A broken file as a standalone `tensor_parallel.py` in `directory` (tests/mutants.py)."""
    return mutants.materialize(broken, directory / "tensor_parallel.py")


def grade_in_process(solution: ModuleType | Path, level: int, seed: int = 1234,
                     only: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(case id, message) for every failed required case of `level` (all cases, or `only`)."""
    from lab.exercises import get
    from lab.exercises.tensor_parallel import drive, grading
    from lab.grader import codec
    from lab.grader.api import RunContext

    module = solution if isinstance(solution, ModuleType) else load_solution(solution)
    ctx = RunContext(device="cpu", seed=seed, model_paths=get("tensor-parallel").model_paths)
    failures = []
    for case in grading.cases(level, seed):
        if only and case.id not in only:
            continue
        expected = codec.decode(codec.encode(grading.expected(case, ctx)))
        try:
            got = codec.decode(codec.encode(drive.run(module, case, ctx)))
        except Exception as exc:  # the learner's exception is a failed case too
            failures.append((case.id, f"{type(exc).__name__}: {exc}"))
            continue
        verdict = grading.check(case, got, expected)
        if not verdict.passed and case.required:
            failures.append((case.id, verdict.message))
    return failures
