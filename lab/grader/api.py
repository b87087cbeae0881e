"""The types an exercise uses to talk to the grader (the contract: lab/README.md).

An exercise package has a child side and a parent side::

    drive.py    (runs in the learner's sandbox child; may import stdlib, torch/numpy,
                 lab.grader.api and the modules it lists in CHILD_MODULES)
        CHILD_MODULES = ("lab.exercises.<pkg>.helper", ...)      # optional
        def run(solution: ModuleType, case: Case, ctx: RunContext) -> Data   # plain outputs
        def warm(device: str) -> None      # optional: load what every case needs (models),
                                           # in a child or grader prepared ahead of a grading

    grading.py  (parent only: never importable in the child)
        REFERENCE = "lab.reference.<module>"
        def cases(level: int, seed: int) -> list[Case]
        def check(case: Case, got: Data, expected: Data) -> Verdict
        def expected(case: Case, ctx: RunContext) -> Data          # optional
        def inputs(case: Case, ctx: RunContext) -> Data | None     # optional: see RunContext

`Data` is what `lab.grader.codec` can carry: None, bool, int, float, str, bytes, list, tuple, dict
with str keys, numpy arrays, torch tensors. Cases and contexts cross the pipe as dicts
(`to_wire` / `case_from_wire` / `ctx_from_wire`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

# The child's environment names the device its grading runs on before anything is imported there
# (a Triton exercise's drive turns on Triton's interpreter off CUDA, before triton's import).
DEVICE_VAR = "DOJO_LAB_DEVICE"


@dataclass(frozen=True)
class Case:
    """One input to grade.

    `params` are JSON-serialisable and shown to the learner as the input to replay; `size` orders
    cases so a failure report shows the smallest failing input; `timed` cases are also timed by
    the platform and reported as a ratio to the reference; `required=False` cases are reported but
    do not decide whether the level passes; `report=True` cases show their verdict message in the
    text report even when they pass (measured figures the learner should see, e.g. α̂ and τ).
    A `timed_once` case (also `timed`) lasts seconds, so one call is sample enough: the
    learner's graded call is the measurement, beside the reference's call of the same case in
    its own child at the same time (see `lab/README.md`, "Timing").
    `slow_class`: what a timed case's inputs are sized to make miss its gate (a level may time
    several cases, each sized for one class, with its own gate: `[level.case_gate.<id>]`),
    named in the message when a correct answer misses it.
    """

    id: str
    level: int
    params: dict[str, Any]
    size: int = 0
    required: bool = True
    timeout_s: float = 10.0
    timed: bool = False
    timed_once: bool = False
    description: str = ""
    report: bool = False
    slow_class: str = ""


@dataclass(frozen=True)
class RunContext:
    """Where and how a case runs: `device` is "cpu" or "cuda" (already resolved from "auto").

    `given`: the inputs of an untimed call as the grader built them (the grading's optional
    `inputs(case, ctx)`, kept between gradings with the answers of fixed cases), for inputs
    that cost the child seconds to build, such as a real model's logits; None when the drive
    builds them from the params itself (always for timed calls, and for the learner's own
    checkpoints, which only a sandbox reads)."""

    device: str = "cpu"
    seed: int = 0
    dtype: str = "float32"
    model_paths: dict[str, str] | None = None
    given: Any = None


@dataclass
class Verdict:
    """The outcome of `check`: the message must point at the bug (expected vs got)."""

    passed: bool
    message: str = ""
    metrics: dict[str, float] = field(default_factory=dict)


def to_wire(obj: Case | RunContext) -> dict[str, Any]:
    """A case or context as a plain dict for the sandbox pipe."""
    return asdict(obj)


def case_from_wire(data: dict[str, Any]) -> Case:
    return Case(**data)


def ctx_from_wire(data: dict[str, Any]) -> RunContext:
    return RunContext(**data)


class GradingModule(Protocol):
    """What the platform expects from `lab/exercises/<id>/grading.py` (parent side)."""

    REFERENCE: str

    def cases(self, level: int, seed: int) -> list[Case]: ...

    def check(self, case: Case, got: object, expected: object) -> Verdict: ...


class DriveModule(Protocol):
    """What the platform expects from `lab/exercises/<id>/drive.py` (child side)."""

    def run(self, solution: Any, case: Case, ctx: RunContext) -> object: ...


def warm_drive(drive: Any, device: object) -> None:
    """Call the drive's optional `warm(device)`: a process prepared ahead of its grading (the
    learner's child, or the grader computing the reference's answers) then loads the models
    before the learner presses grade instead of during the first case that needs them."""
    fn = getattr(drive, "warm", None)
    if callable(fn) and isinstance(device, str):
        fn(device)
