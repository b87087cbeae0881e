"""Plan a grading: check and resolve what was asked (the options, the levels, the device, the
learner's own checkpoints) before any child starts, and the rules for the order and fate of the
cases (cheapest first; which failures stop a level)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.exercises import Exercise, ExerciseError
from lab.grader import events
from lab.grader.api import Case
from lab.grader.boundary import REFERENCE_DIR
from lab.grader.device import resolve_device

if TYPE_CHECKING:
    from lab.grader.spawn import Prepared
    from lab.models.checkpoint import Checkpoint

Emit = Callable[[events.Event], None]
NO_CONFINE_VAR = "DOJO_LAB_NO_CONFINE"
MAX_CHILD_LOSSES = 3  # after this many timeouts/crashes/memory kills the rest is not run


# A failure that needs no reference answer to explain (the learner's code never answered).
NO_EXPECTED_KINDS = frozenset({"not_implemented", "forbidden_import", "memory", "timeout",
                               "crash", "exit", "unsendable", "protocol"})
# A failure after which the rest of the level is not run: every case would fail the same way.
STOP_LEVEL_KINDS = frozenset({"not_implemented"})


SEED_BITS = 31  # every call's seed, graded or timed, is uniform in [0, 2**31)


def timed_seeds(n: int) -> list[int]:
    """Seeds for `n` timed calls, drawn from the OS per batch: a solution cannot know a timed
    call's inputs before the call (the replayable `--seed` decides the graded cases only)."""
    return [secrets.randbits(SEED_BITS) for _ in range(n)]


def checked_seed(seed: int, case: Case) -> int:
    """The seed of `case`'s graded call: the run's `--seed` and the case hashed into the range
    timed seeds are drawn from, so its size does not tell a solution that this call is the
    checked one (the replay seed is under 10^6), `--seed` still replays it, and no two cases
    of a run share one."""
    digest = hashlib.sha256(f"{seed}/{case.level}/{case.id}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> (32 - SEED_BITS)


def cheapest_first(cases: list[Case]) -> list[Case]:
    """Cases in order of cost (`Case.size`), stable, so the first failure comes back fast."""
    return sorted(cases, key=lambda c: c.size)


class UsageError(Exception):
    """Bad arguments (exit status 2 in the CLI)."""


@dataclass(frozen=True)
class GradeOptions:
    """Everything `grade()` (and `prepare()`, which reads the fields that shape a child) can be
    told besides the exercise and the file; each default is the exercise's own setting.

    `cancel` (e.g. `threading.Event().is_set`) is polled every few milliseconds; once it returns
    True the child is killed and `lab.grader.isolation.Cancelled` is raised (no summary event,
    nothing stored). `confine=False` runs the learner's code without a sandbox, at the
    learner's request (`dojo lab grade --unconfined`, or DOJO_LAB_NO_CONFINE=1 in the
    environment): the grading says so and the attempt records `unconfined`. Confined is the
    default, and where no confinement can be had the grading refuses to run. Nothing is stored
    here: the lab service (`trainer.core.lab.grade_recorded`) records the result.
    `attempt_metrics` (e.g. an interview rehearsal's clock) travel on the result, for the
    recorder to store with every graded level's figures. `prepared`: a child started ahead by
    `prepare()`, adopted when nothing that shapes it differs."""

    levels: list[int] | None = None
    device: str = "auto"
    seed: int | None = None
    emit: Emit | None = None
    memory_mb: int | None = None
    run_timeout_s: float | None = None
    timing_repeats: int | None = None
    cancel: Callable[[], bool] | None = None
    case_timeout_s: float | None = None
    load_timeout_s: float | None = None
    models: dict[str, str] | None = None
    confine: bool | None = None
    attempt_metrics: dict[str, float] | None = None
    prepared: Prepared | None = field(default=None, compare=False)
    # time on the device's clock as GPU graders do (lab.grader.gpu_timing); None: on CUDA only
    # (True on the CPU runs the same logic with its stand-in clock: tests)
    event_timing: bool | None = None
    # where the reference's answers of fixed cases are kept between gradings
    # (lab.grader.expected_cache; None: computed in every grading)
    expected_cache: Path | None = None


def replay_command(exercise: str, levels: list[int], seed: int, all_levels: list[int],
                   models: dict[str, str] | None = None) -> str:
    level = f" --level {levels[0]}" if len(levels) == 1 and levels != all_levels else ""
    own = "".join(f" --{role} {path}" for role, path in sorted((models or {}).items()))
    return f"dojo lab grade {exercise}{level} --seed {seed}{own}"


def check_models(exercise: Exercise, models: dict[str, str],
                 levels: list[int] | None = None) -> dict[str, Checkpoint]:
    """Validate `--target/--draft` checkpoints before any case runs: roles the exercise takes,
    then each folder's files (`lab.models.checkpoint`: config, architecture, weights,
    tokenizer; a draft's tokenizer equal to the target's; mixed attention windows where a
    level cannot take them), each refusal naming the file and the fault."""
    from lab.models.checkpoint import CheckpointError, check, check_pair, mixed_windows

    unknown = sorted(set(models) - set(exercise.model_roles))
    if unknown:
        takes = ", ".join(f"--{r}" for r in exercise.model_roles) or "no model options"
        raise UsageError(f"{exercise.id} does not take --{unknown[0]} (it takes {takes})")
    checked: dict[str, Checkpoint] = {}
    role = ""
    try:
        for role, path in models.items():
            _not_around_the_app(role, path)
            checked[role] = check(path, tokenizer=role == "target")
        if "target" in checked and "draft" in checked:
            role = "draft"
            check_pair(checked["target"], checked["draft"])
        trees = exercise.id == "spec-verify" and 5 in (levels or exercise.level_numbers)
        for role in checked if trees else ():
            mixed = mixed_windows(checked[role])
            if mixed:
                raise CheckpointError(
                    f"{checked[role].folder / 'config.json'}: layers mix attention kinds "
                    f"{mixed}; level 5's tree pass takes one attention mask for every layer. "
                    "Grade levels 1-4 with it (--level), or pick a model without a window")
    except CheckpointError as exc:
        raise UsageError(f"--{role} {models[role]}: {exc}") from exc
    return checked


def _not_around_the_app(role: str, path: str) -> None:
    """A model folder is shown to the learner's child read-only, so it must not hold the app's
    checkout or the data folder (that would show the reference and the database)."""
    from lab.grader import root

    folder = os.path.realpath(path)
    for held, what in ((str(root.REPO_ROOT), "the app's own files"),
                       (os.path.realpath(root.data_folder()), "your data folder")):
        if held == folder or held.startswith(os.path.join(folder, "")):
            raise UsageError(f"--{role} {path}: this folder holds {what}, which the graded "
                             "code must not see; point at the checkpoint's own folder")


def checkpoint_allowance_mb(models: dict[str, Checkpoint]) -> int:
    """Extra sandbox memory for the learner's own checkpoints: 3x the bytes their loaded weight
    files occupy on disk (the mapped file while loading, plus an fp32 copy of fp16/bf16
    weights), so a 7B target is graded rather than killed at a cap sized for the shipped pair.
    Files transformers does not load, and the holes of sparse files, count for nothing."""
    return 3 * sum(c.disk_bytes for c in models.values()) >> 20


@dataclass(frozen=True)
class GradingPlan:
    """The options resolved: what both a grading and a prepared child depend on."""

    exercise: Exercise
    levels: list[int]
    device: str
    device_note: str
    memory_mb: int
    models: dict[str, str]
    confine: bool


def plan_grading(exercise: Exercise, solution: Path, options: GradeOptions) -> GradingPlan:
    """Check and resolve the options for grading `solution` (UsageError says what is wrong)."""
    chosen = options.levels or exercise.level_numbers
    try:
        for n in chosen:
            exercise.level(n)
    except ExerciseError as exc:
        raise UsageError(str(exc)) from exc
    missing = exercise.unavailable()
    if missing:
        raise UsageError(f"{exercise.id} cannot be graded here: it {missing}")
    if exercise.needs_torch and not exercise.needs_torch_for(chosen):
        exercise = dataclasses.replace(exercise, needs_torch=False)
    if not solution.is_file():
        raise UsageError(f"no solution file at {solution} — run `dojo lab start {exercise.id}`")
    if solution.is_symlink() and solution.resolve().parent != solution.parent.resolve():
        raise UsageError(f"{solution} is a symbolic link to {solution.resolve()}, outside its "
                         "folder: the grader grades the file in your workspace, not one a link "
                         "points to elsewhere. Put the code itself in the workspace file")
    if solution.resolve().parent == REFERENCE_DIR:
        raise UsageError(f"{solution} is a reference implementation, not a solution: the grader "
                         "compares against it. Grade your own file (dojo lab start "
                         f"{exercise.id}), or a copy of this one outside lab/reference/")
    checked = check_models(exercise, options.models or {}, chosen)
    from lab.grader.device import DeviceError

    try:
        resolved, note = resolve_device(options.device, exercise.needs_torch)
    except DeviceError as exc:
        raise UsageError(str(exc)) from exc
    confine = options.confine
    return GradingPlan(exercise, chosen, resolved, note,
                options.memory_mb or exercise.memory_mb + checkpoint_allowance_mb(checked),
                {role: str(c.folder) for role, c in checked.items()},
                os.environ.get(NO_CONFINE_VAR) != "1" if confine is None else confine)


def next_level(exercise: Exercise, graded: list[int]) -> dict[str, Any] | None:
    """The level after the highest one graded ({number, title, command}), None after the last."""
    later = [n for n in exercise.level_numbers if n > max(graded)]
    if not later:
        return None
    level = exercise.level(later[0])
    return {"number": level.number, "title": level.title,
            "command": f"dojo lab start {exercise.id} --level {level.number}"}
