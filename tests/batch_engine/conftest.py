"""batch-engine tests: paths, one torch thread, and an in-process grader for the probe cases.

`grade_in_process` runs the exercise's own `drive.run` and `grading.check` on a level's cases
without the sandbox (a subprocess per grading run costs a model load); the platform path is
covered end to end by test_grading.py for the reference, the stub and a few broken engines.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from tests.answers import answer
from tests.mutants import load_solution

HERE = Path(__file__).resolve().parent
BROKEN = HERE / "broken"
REFERENCE_FILE = HERE.parents[1] / "lab" / "reference" / "batch_engine.py"


def materialize(broken: Path, directory: Path) -> Path:
    """A broken engine as a standalone `batch_engine.py` (the reference's text with its
    mutations): the sandbox child cannot read lab/reference, so it must not build it there."""
    load_solution(broken)
    base = sys.modules["_engine_base"]
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "batch_engine.py"
    target.write_text(base.SOURCES[broken.stem], encoding="utf-8")
    return target


def grade_in_process(path: Path, level: int, seed: int = 1234, target: bool = False,
                     ) -> list[tuple[str, str]]:
    """(case id, message) for every failed case of `level` (target-model cases only if asked),
    the level's gate included."""
    import torch

    from lab.exercises import get
    from lab.exercises.batch_engine import drive, grading
    from lab.grader.api import RunContext
    from lab.grader.measure import check_gate

    gate = get("batch-engine").level(level).gate
    torch.set_num_threads(1)
    solution = load_solution(path)
    ctx = RunContext(device="cpu", seed=seed)
    failures = []
    for case in grading.cases(level, seed):
        if case.params["model"] == "target" and not target:
            continue
        expected = answer("batch-engine", case, seed, lambda c: grading.expected(c, ctx))
        try:
            got = drive.run(solution, case, ctx)
        except Exception as exc:  # the learner's exception is a failed case too
            failures.append((case.id, f"{type(exc).__name__}: {exc}"))
            continue
        verdict = grading.check(case, got, expected)
        missed = check_gate(gate, verdict.metrics) if verdict.passed else ""
        if not verdict.passed or missed:
            failures.append((case.id, verdict.message or f"gate: {missed}"))
    return failures


def grade_case(path: Path, level: int, case_id: str, seed: int = 1234) -> str:
    """The failure message of one case of `level` ("" when it passes)."""
    import torch

    from lab.exercises.batch_engine import drive, grading
    from lab.grader.api import RunContext

    torch.set_num_threads(1)
    case = next(c for c in grading.cases(level, seed) if c.id == case_id)
    ctx = RunContext(device="cpu", seed=seed)
    expected = answer("batch-engine", case, seed, lambda c: grading.expected(c, ctx))
    verdict = grading.check(case, drive.run(load_solution(path), case, ctx), expected)
    return "" if verdict.passed else verdict.message
