"""decode-attention tests: an in-process grader (no sandbox) for the broken kernels, and paths.

The kernels run under Triton's interpreter (the drive sets TRITON_INTERPRET=1 before any triton
import). A broken kernel is the reference's text with one mutation (tests/mutants.py), written
out as a real file before it is imported: @triton.jit reads its kernel's source from the file.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TRITON_INTERPRET", "1")

from tests import mutants

HERE = Path(__file__).resolve().parent
BROKEN = HERE / "broken"
WORKSPACE_FILE = "decode_attention.py"


def materialize(broken: Path, directory: Path) -> Path:
    """A broken file as a standalone `decode_attention.py` in `directory`."""
    return mutants.materialize(broken, directory / WORKSPACE_FILE)


def grade_in_process(path: Path, level: int, seed: int = 1234,
                     only: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(case id, message) for every failed required case of `level`, graded here on the CPU
    (`path`: a standalone solution file; `only`: these case ids alone)."""
    from lab.exercises.decode_attention import drive, grading
    from lab.grader.api import RunContext

    solution = mutants.load_solution(path)
    ctx = RunContext(device="cpu", seed=seed)
    failures = []
    for case in grading.cases(level, seed):
        if only and case.id not in only:
            continue
        try:
            got = drive.run(solution, case, ctx)
        except Exception as exc:  # the learner's exception is a failed case too
            failures.append((case.id, f"{type(exc).__name__}: {exc}"))
            continue
        verdict = grading.check(case, got, grading.expected(case, ctx))
        if not verdict.passed and case.required:
            failures.append((case.id, verdict.message))
    return failures

