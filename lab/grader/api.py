"""The types an exercise's `grading.py` uses to talk to the grader (see LAB-PROTOCOL.md).

A grading module defines::

    REFERENCE = "lab.reference.<module>"          # module path of the reference
    def cases(level: int, seed: int) -> list[Case]
    def run(solution: ModuleType, case: Case, ctx: RunContext) -> object   # picklable observation
    def check(case: Case, got: object, expected: object) -> Verdict

`run` executes in the learner's sandbox subprocess for the learner's module and in the grader
process for the reference, so it must not import `lab.reference` itself. Everything here is plain
data: cases and contexts are pickled across the sandbox pipe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Case:
    """One input to grade.

    `params` are JSON-serialisable and shown to the learner as the input to replay; `size` orders
    cases so a failure report shows the smallest failing input; `timed` cases are also timed by
    the platform and reported as a ratio to the reference; `required=False` cases are reported but
    do not decide whether the level passes; `report=True` cases show their verdict message in the
    text report even when they pass (measured figures the learner should see, e.g. α̂ and τ).
    """

    id: str
    level: int
    params: dict[str, Any]
    size: int = 0
    required: bool = True
    timeout_s: float = 10.0
    timed: bool = False
    description: str = ""
    report: bool = False


@dataclass(frozen=True)
class RunContext:
    """Where and how a case runs: `device` is "cpu" or "cuda" (already resolved from "auto")."""

    device: str = "cpu"
    seed: int = 0
    dtype: str = "float32"
    model_paths: dict[str, str] | None = None


@dataclass
class Verdict:
    """The outcome of `check`: the message must point at the bug (expected vs got)."""

    passed: bool
    message: str = ""
    metrics: dict[str, float] = field(default_factory=dict)


class GradingModule(Protocol):
    """What the platform expects from `lab/exercises/<id>/grading.py` (for type checking)."""

    REFERENCE: str

    def cases(self, level: int, seed: int) -> list[Case]: ...

    def run(self, solution: Any, case: Case, ctx: RunContext) -> object: ...

    def check(self, case: Case, got: object, expected: object) -> Verdict: ...
