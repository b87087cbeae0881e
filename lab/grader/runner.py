"""Grade a learner's file against an exercise: cases from a seed, reference answers computed
here, the learner's answers computed in a sandbox child, checks and timing done here, events
emitted as it goes. The child only ever returns plain data (`lab.grader.codec`).

`grade()` is what the CLI, the watcher and the TUI call; it never raises for anything the
learner's code does (that becomes a failed case), only for usage errors (unknown level, missing
file, unavailable device).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import os
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.exercises import Exercise, ExerciseError
from lab.grader import boundary, codec, events
from lab.grader.api import Case, RunContext, Verdict, to_wire, warm_drive
from lab.grader.boundary import REFERENCE_DIR
from lab.grader.device import resolve_device
from lab.grader.isolation import Cancelled, Outcome, Sandbox
from lab.grader.timing import (
    cpu_threads_one,
    interleaved_order,
    matched_batches,
    next_batch_size,
    summarize,
)

if TYPE_CHECKING:
    from lab.grader.record import Recorder

Emit = Callable[[events.Event], None]
NO_CONFINE_VAR = "DOJO_LAB_NO_CONFINE"
REFERENCE_PACKAGE = "lab.reference"  # grading.REFERENCE is lab.reference.<exercise package>
MAX_CHILD_LOSSES = 3  # after this many timeouts/crashes/memory kills the rest is not run


# A failure that needs no reference answer to explain (the learner's code never answered).
NO_EXPECTED_KINDS = frozenset({"not_implemented", "forbidden_import", "memory", "timeout",
                               "crash", "exit", "unsendable", "protocol"})
# A failure after which the rest of the level is not run: every case would fail the same way.
STOP_LEVEL_KINDS = frozenset({"not_implemented"})


def timed_seeds(n: int) -> list[int]:
    """Seeds for `n` timed calls, drawn from the OS per batch: a solution cannot know a timed
    call's inputs before the call (the replayable `--seed` decides the graded cases only)."""
    return [secrets.randbits(31) for _ in range(n)]


def cheapest_first(cases: list[Case]) -> list[Case]:
    """Cases in order of cost (`Case.size`), stable, so the first failure comes back fast."""
    return sorted(cases, key=lambda c: c.size)


class UsageError(Exception):
    """Bad arguments (exit status 2 in the CLI)."""


@dataclass
class CaseResult:
    case: Case
    passed: bool
    kind: str = ""
    message: str = ""
    traceback: str = ""
    output: str = ""
    expected: str = ""
    got: str = ""
    duration_s: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)


class Overtime:
    """Stops a learner's `timed_once` call that has already lost: once the reference's call
    beside it has finished in r seconds, a learner's call still running after bound x r (the
    level's speed gate) measures over the bound in wall-clock time, so its verdict is "too
    slow" whatever else happens. It is killed there (5% later, for the two stopwatches'
    skew) rather than waited for: a 20x solution of a 5 s stream answers in ~20 s, not 100."""

    SLACK = 1.05

    def __init__(self, sandbox: Sandbox, bound: float) -> None:
        self.sandbox, self.bound = sandbox, bound
        self.started = time.monotonic()
        self.reference_s = 0.0
        self.limit_s = 0.0
        self.fired = False
        self._done = False
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    @classmethod
    def watch(cls, sandbox: Sandbox, beside: Future[Outcome | str] | None,
              gate: dict[str, float]) -> Overtime | None:
        """An armed watch for the learner's call starting now, or None (no reference call
        beside it, or no wall-clock ratio bound in the gate)."""
        bounds = [gate[k] for k in ("median_ratio_max", "p95_ratio_max") if k in gate]
        if beside is None or not bounds:
            return None
        watch = cls(sandbox, min(bounds))
        beside.add_done_callback(watch._arm)
        return watch

    def _arm(self, beside: Future[Outcome | str]) -> None:
        reference = None if beside.cancelled() or beside.exception() else beside.result()
        if not isinstance(reference, Outcome) or not reference.ok:
            return  # the reference failed: the case reports that, nothing to compare with
        self.reference_s = reference.elapsed_s
        self.limit_s = self.bound * reference.elapsed_s * self.SLACK
        with self._lock:
            if self._done:
                return
            delay = self.started + self.limit_s - time.monotonic()
            self._timer = threading.Timer(max(0.0, delay), self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._done:
                self.fired = True
                self.sandbox.signal_kill()

    def stopped(self) -> bool:
        """Called once the learner's call returned: disarms the watch; True if it fired."""
        with self._lock:
            self._done = True
            if self._timer is not None:
                self._timer.cancel()
            return self.fired

    def message(self) -> str:
        return (f"too slow for this level: stopped after {self.limit_s:.1f} s, over "
                f"{self.bound:g}× the reference's {self.reference_s:.2f} s for the same case "
                "run beside it (your result was not checked)")

    def metrics(self) -> dict[str, float]:
        return {"median_ratio": self.limit_s / max(self.reference_s, 1e-9),
                "reference_median_ms": self.reference_s * 1e3, "samples": 1.0,
                "stopped_after_ms": self.limit_s * 1e3}


@dataclass
class LevelResult:
    level: int
    results: list[CaseResult]
    duration_s: float

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results if r.case.required)

    def smallest_failure(self) -> CaseResult | None:
        failed = [r for r in self.results if not r.passed]
        failed.sort(key=lambda r: (r.kind == "skipped", not r.case.required, r.case.size,
                                   r.case.id))  # a case that ran before one that did not
        return failed[0] if failed else None

    def metrics(self) -> dict[str, float]:
        """Worst ratio over the timed cases (the figure a gate and `lab list` care about)."""
        out: dict[str, float] = {}
        for r in self.results:
            for key in ("median_ratio", "p95_ratio"):
                if key in r.metrics:
                    out[key] = max(out.get(key, 0.0), r.metrics[key])
        return out


@dataclass
class GradeResult:
    exercise: str
    device: str
    seed: int
    solution: Path
    levels: list[LevelResult]
    duration_s: float
    stored: bool = False
    store_error: str = ""
    sandboxes_started: int = 0  # 1 unless the learner's code got a child killed or crashed
    events: list[events.Event] = field(default_factory=list)  # everything grade() emitted
    attempt_metrics: dict[str, float] = field(default_factory=dict)  # stored with each level

    @property
    def passed(self) -> bool:
        return all(lvl.passed for lvl in self.levels)


def replay_command(exercise: str, levels: list[int], seed: int, all_levels: list[int],
                   models: dict[str, str] | None = None) -> str:
    level = f" --level {levels[0]}" if len(levels) == 1 and levels != all_levels else ""
    own = "".join(f" --{role} {path}" for role, path in sorted((models or {}).items()))
    return f"dojo lab grade {exercise}{level} --seed {seed}{own}"


def check_models(exercise: Exercise, models: dict[str, str]) -> dict[str, str]:
    """Validate `--target/--draft` checkpoints: roles the exercise takes, local HF folders."""
    unknown = sorted(set(models) - set(exercise.model_roles))
    if unknown:
        takes = ", ".join(f"--{r}" for r in exercise.model_roles) or "no model options"
        raise UsageError(f"{exercise.id} does not take --{unknown[0]} (it takes {takes})")
    checked: dict[str, str] = {}
    for role, path in models.items():
        folder = Path(path).expanduser().resolve()
        if not (folder / "config.json").is_file():
            raise UsageError(f"--{role} {path}: not a local Hugging Face model folder "
                             "(no config.json); nothing is downloaded")
        checked[role] = str(folder)
    return checked


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


def checkpoint_allowance_mb(models: dict[str, str]) -> int:
    """Extra sandbox memory for the learner's own checkpoints: 3x their weight files (the mapped
    file while loading, plus an fp32 copy of fp16/bf16 weights), so a 7B target is graded rather
    than killed at a cap sized for the shipped pair."""
    total = 0
    for path in models.values():
        for file in Path(path).iterdir():
            if file.name.endswith(WEIGHT_SUFFIXES) and file.is_file():
                total += file.stat().st_size
    return 3 * total >> 20


def check_gate(gate: dict[str, float], metrics: dict[str, float]) -> str:
    """'' when every bound holds, else what was missed ("p95_ratio 1.8 > 1.5"). An upper bound
    on a timing ratio holds for its CPU-time twin too (`cpu_<name>`, see timing.summarize)."""
    missed = []
    for key, bound in sorted(gate.items()):
        name, _, side = key.rpartition("_")
        if name not in metrics or side not in ("max", "min"):
            continue
        value = metrics[name]
        cpu = metrics.get(f"cpu_{name}")
        if side == "max" and value <= bound and cpu is not None and cpu > bound:
            missed.append(f"{name} {cpu:.2f} > {bound:g} in CPU time (wall clock "
                          f"{value:.2f}: a busy machine)")
        elif side == "max" and value > bound:
            missed.append(f"{name} {value:.2f} > {bound:g}")
        if side == "min" and value < bound:
            missed.append(f"{name} {value:.2f} < {bound:g}")
    return ", ".join(missed)


def sandbox_options(exercise: Exercise, device: str, memory_mb: int,
                    load_timeout_s: float | None, confine: bool) -> dict[str, Any]:
    """What shapes a learner's (or the reference's) child for this exercise and device."""
    uses_torch_cpu = exercise.needs_torch and device == "cpu"
    return dict(
        module_name=Path(exercise.workspace_file).stem,
        memory_mb=memory_mb,
        torch_threads=1 if uses_torch_cpu else None,
        data_limit=device == "cpu",
        load_timeout_s=load_timeout_s or exercise.load_timeout_s,
        confine=confine,
    )


def reference_guess(exercise: Exercise) -> str:
    """The reference module by convention (checked against grading.REFERENCE once that module
    is imported): known before the grading module, so the child can start first."""
    return f"{REFERENCE_PACKAGE}.{exercise.module.rsplit('.', 1)[-1]}"


def learner_sandbox(exercise: Exercise, solution: Path, reference: str,
                    options: dict[str, Any]) -> tuple[boundary.Boundary, Sandbox]:
    found = boundary.compute(exercise.module, reference)
    hide = [h for h in found.hidden(trusted=False)
            if Path(h) != solution.resolve()]  # e.g. the stub, graded in place
    return found, Sandbox(solution=solution, load=found.load_message(trusted=False), hide=hide,
                          **options)


def reference_sandbox(solution: Path, found: boundary.Boundary,
                      options: dict[str, Any]) -> Sandbox:
    """The grader's own child for timing the reference (trusted: nothing hidden from it)."""
    return Sandbox(solution=solution, load=found.load_message(trusted=True),
                   hide=found.hidden(trusted=True), **options)


def child_key(exercise: Exercise, solution: Path, device: str, reference: str,
              options: dict[str, Any]) -> tuple[Any, ...]:
    return (exercise.id, exercise.needs_torch, str(solution.resolve()), device, reference,
            tuple(sorted(options.items())))


@dataclass
class Prepared:
    """A learner's child spawned and warmed (torch imported) before its grading, on a thread:
    `grade(..., prepared=)` adopts it when nothing that shapes the child differs (else closes
    it). It never holds the learner's code: the file is loaded when the grading starts.

    When the levels have a timed case, the reference's timing child is spawned and warmed too,
    once the learner's is ready (so the learner's first failure never waits for it): the
    grading's first timed case then only loads the reference into it, instead of waiting
    seconds for a fresh child's torch import."""

    key: tuple[Any, ...]
    boundary: boundary.Boundary
    sandbox: Sandbox
    exercise: Exercise | None = None
    device: str | None = None
    outcome: Outcome | None = None
    levels: list[int] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    reference: Sandbox | None = None  # the timing child, warmed by `_warm_reference`
    thread: threading.Thread = field(init=False)
    imports: threading.Thread = field(init=False)
    reference_thread: threading.Thread | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        # This process imports what the grading will (the grading module, the reference and
        # its drive: torch) while the child warms on the other core.
        self.imports = threading.Thread(target=self._import, daemon=True)
        self.imports.start()
        self.thread = threading.Thread(target=self._warm, daemon=True)
        self.thread.start()

    def _warm(self) -> None:
        with contextlib.suppress(Exception):  # a failed warm-up: the grading starts its own
            self.outcome = self.sandbox.prepare(self.device)
        if self.outcome is not None and self.outcome.ok and self._has_timed_case():
            self.reference = reference_sandbox(self.sandbox.solution, self.boundary,
                                               self.options)
            self.reference_thread = threading.Thread(target=self._warm_reference, daemon=True)
            self.reference_thread.start()

    def _has_timed_case(self) -> bool:
        self.imports.join()
        if self.exercise is None or not self.options:
            return False
        try:
            grading = self.exercise.grading()
            return any(c.timed for n in self.levels for c in grading.cases(n, 0))
        except Exception:
            return False

    def _warm_reference(self) -> None:
        assert self.reference is not None
        with contextlib.suppress(Exception):  # not warm: the grading starts its own
            self.reference.prepare(None)  # torch and the drive imported; no models loaded

    def _import(self) -> None:
        if self.exercise is None:
            return
        with contextlib.suppress(Exception):  # the grading imports again and reports a failure
            grading = self.exercise.grading()
            importlib.import_module(grading.REFERENCE)
            warm_drive(importlib.import_module(self.boundary.drive), self.device)

    def wait(self) -> Outcome | None:
        """Block until the child is warm and this process's imports are done (not for the
        reference's child: `take_reference` waits for that one)."""
        self.thread.join()
        self.imports.join()
        return self.outcome

    def take_reference(self, *, use: bool = True) -> Sandbox | None:
        """The reference's warmed timing child, handed over once (waiting for its warm-up);
        None when none was prepared or its warm-up failed. `use=False` discards it without
        waiting: a warm-up in flight is killed (a stub's verdict must not wait for a torch
        import it will never use)."""
        self.thread.join()
        ref, self.reference = self.reference, None
        if ref is None:
            return None
        if not use:
            ref.signal_kill()  # the warm-up's pending request then ends at once
        if self.reference_thread is not None:
            self.reference_thread.join()
        if not (use and ref.ready and ref.alive):
            ref.close()
            return None
        return ref

    @property
    def usable(self) -> bool:
        """Still worth adopting: warming, or warmed and neither used by a grading nor dead."""
        return self.thread.is_alive() or (self.outcome is not None and self.outcome.ok
                                          and self.sandbox.ready and self.sandbox.alive)

    def close(self) -> None:
        self.wait()
        self.sandbox.close()
        self.take_reference(use=False)


@dataclass(frozen=True)
class _Plan:
    """grade()'s arguments resolved: what both a grading and a prepared child depend on."""

    exercise: Exercise
    levels: list[int]
    device: str
    device_note: str
    memory_mb: int
    models: dict[str, str]
    confine: bool


def _plan(exercise: Exercise, solution: Path, levels: list[int] | None, device: str,
          memory_mb: int | None, models: dict[str, str] | None, confine: bool | None) -> _Plan:
    """Check and resolve grade()'s arguments (UsageError says what is wrong)."""
    chosen = levels or exercise.level_numbers
    try:
        for n in chosen:
            exercise.level(n)
    except ExerciseError as exc:
        raise UsageError(str(exc)) from exc
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
    checked = check_models(exercise, models or {})
    from lab.grader.device import DeviceError

    try:
        resolved, note = resolve_device(device, exercise.needs_torch)
    except DeviceError as exc:
        raise UsageError(str(exc)) from exc
    return _Plan(exercise, chosen, resolved, note,
                 memory_mb or exercise.memory_mb + checkpoint_allowance_mb(checked), checked,
                 os.environ.get(NO_CONFINE_VAR) != "1" if confine is None else confine)


def prepare(exercise: Exercise, solution: Path, *, levels: list[int] | None = None,
            device: str = "auto", memory_mb: int | None = None,
            models: dict[str, str] | None = None, confine: bool | None = None,
            load_timeout_s: float | None = None,
            current: Prepared | None = None) -> Prepared | None:
    """Start the learner's child for a grading that is likely to come (`dojo lab watch`
    between saves, the TUI's grader between presses of g, or as soon as a torch lab is
    selected): the next grading with the same arguments then skips the child's start and both
    processes' torch imports. None when there is nothing to gain (no torch) or the arguments
    would not grade. `current`, an earlier Prepared, is returned as it is when it would serve
    the same grading, else closed."""
    try:
        plan = _plan(exercise, solution, levels, device, memory_mb, models, confine)
    except UsageError:
        plan = None
    if plan is None or not plan.exercise.needs_torch:
        if current is not None:  # a pure-Python child starts in a fraction of a second anyway
            current.close()
        return None
    options = sandbox_options(plan.exercise, plan.device, plan.memory_mb, load_timeout_s,
                              plan.confine)
    guess = reference_guess(plan.exercise)
    key = child_key(plan.exercise, solution, plan.device, guess, options)
    if current is not None:
        if current.key == key and current.usable:
            return current
        current.close()
    found, sandbox = learner_sandbox(plan.exercise, solution, guess, options)
    return Prepared(key, found, sandbox, plan.exercise, plan.device, levels=plan.levels,
                    options=options)


class _Grading:
    """State of one grading run (kept out of `grade()` to keep each step small)."""

    def __init__(
        self,
        exercise: Exercise,
        solution: Path,
        device: str,
        seed: int,
        emit: Emit,
        memory_mb: int,
        run_timeout_s: float,
        timing_repeats: int,
        case_timeout_s: float | None = None,
        model_paths: dict[str, str] | None = None,
        load_timeout_s: float | None = None,
        confine: bool = True,
        prepared: Prepared | None = None,
    ) -> None:
        self.exercise = exercise
        self.case_timeout_s = case_timeout_s
        self.child_losses: list[str] = []
        self.solution = solution
        self.device = device
        self.seed = seed
        self.emit = emit
        self.timing_repeats = timing_repeats
        self.ctx = RunContext(device=device, seed=seed, dtype=exercise.dtype,
                              model_paths={**(exercise.model_paths or {}),
                                           **(model_paths or {})} or None)
        self.replay = ""
        self.notified = False
        self.sandbox_options = sandbox_options(exercise, device, memory_mb, load_timeout_s,
                                               confine)
        self.reference_sandbox: Sandbox | None = None  # started for the first timed case
        self.imports: threading.Thread | None = None  # `_import_behind`, joined before timing
        self.any_passed = False
        self._reference_start: threading.Thread | None = None
        self._warmed: set[str] = set()  # timed cases run once in the reference's child ahead
        self._reference_warm: set[str] = set()  # ... and those runs that succeeded in its child
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reference")
        self._pending: list[Future[tuple[bool, object]]] = []
        self.load_failure: Outcome | None = None
        self.loaded = False
        # The learner's child loads (torch, their module) while this process imports the
        # grading module (torch too): the two imports overlap instead of adding up. The
        # reference's module name is guessed by convention and checked once grading is loaded.
        # A child prepared ahead (`prepare`: spawned, torch imported) is adopted when nothing
        # that shapes it differs; it then only loads the learner's file.
        guess = reference_guess(exercise)
        self._early: threading.Thread | None = None
        self._early_outcome: Outcome | None = None
        self._prepared: Prepared | None = None
        key = child_key(exercise, solution, device, guess, self.sandbox_options)
        self._prepared_reference: Prepared | None = None  # its timing child, see Prepared
        if prepared is not None and prepared.key == key:
            self.boundary, self.sandbox, self._prepared = (prepared.boundary, prepared.sandbox,
                                                           prepared)
            self._prepared_reference = prepared
        else:
            if prepared is not None:
                prepared.close()
            self.sandbox = self._learner_sandbox(guess)
            if exercise.needs_torch:
                self._early = threading.Thread(target=self._start_early, daemon=True)
                self._early.start()
        try:
            self.grading = exercise.grading()
            self.reference = importlib.import_module(self.grading.REFERENCE)
            if guess != self.grading.REFERENCE:
                self._take_early()
                self._take_prepared()
                self._drop_prepared_reference()
                self.sandbox.close()
                self.sandbox = self._learner_sandbox(self.grading.REFERENCE)
                self._early_outcome = None
            self.drive: Any = importlib.import_module(self.boundary.drive)
        except BaseException:
            self._take_early()
            self.sandbox.close()
            raise
        self.deadline = time.monotonic() + run_timeout_s
        self.run_timeout_s = run_timeout_s

    def _learner_sandbox(self, reference: str) -> Sandbox:
        self.boundary, sandbox = learner_sandbox(self.exercise, self.solution, reference,
                                                 self.sandbox_options)
        return sandbox

    def _take_prepared(self) -> None:
        """Wait for the prepared child's warm-up (if it failed, the sandbox is closed and the
        normal start spawns a fresh one)."""
        if self._prepared is not None:
            self._prepared.wait()
            self._prepared = None

    def _drop_prepared_reference(self) -> None:
        if self._prepared_reference is not None:
            self._prepared_reference.take_reference(use=False)
            self._prepared_reference = None

    def _start_early(self) -> None:
        self._early_outcome = self._start(self.sandbox, notify=False)

    def _take_early(self) -> Outcome | None:
        """The early start's outcome (waiting for it), once; None if there was none."""
        if self._early is None:
            return None
        self._early.join()
        self._early = None
        outcome, self._early_outcome = self._early_outcome, None
        return outcome

    def _ahead(self, case: Case) -> Future[tuple[bool, object]]:
        future = self._pool.submit(self._expected, case)
        self._pending.append(future)
        return future

    def _settle(self) -> None:
        """Wait for reference answers still being computed (a case the learner failed), and for
        imports still running behind the grading."""
        if self.imports is not None:
            self.imports.join()
        for future in self._pending:
            with contextlib.suppress(Exception):
                future.result()
        self._pending.clear()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._take_early()
        self._take_prepared()
        if self._reference_start is not None and self.reference_sandbox is not None:
            self.reference_sandbox.signal_kill()  # a warm-up run in flight ends now
        self._join_reference_start()
        self._drop_prepared_reference()
        self.sandbox.close()
        if self.reference_sandbox is not None:
            self.reference_sandbox.close()

    # -- the learner's side ----------------------------------------------------------------
    def _start(self, sandbox: Sandbox, notify: bool = True) -> Outcome:
        """Start a child; a load timeout is retried once (a busy machine, not the code)."""
        outcome = sandbox.start()
        if not outcome.ok and outcome.kind == "timeout" and not sandbox.cancelled():
            sandbox.close()
            outcome = sandbox.start()
            if not outcome.ok and outcome.kind == "timeout":
                outcome.message += " (twice: the first try was retried in case the machine " \
                                   "was busy)"
        if notify:
            self._notice(sandbox, outcome)
        return outcome

    def _notice(self, sandbox: Sandbox, outcome: Outcome) -> None:
        if outcome.ok and sandbox.missing and not self.notified:
            self.notified = True
            self.emit(events.Notice(message="sandbox: running without "
                                  + "; ".join(sandbox.missing)
                                  + " (see lab/README.md, \"The judge's boundary\")"))

    def _ensure_child(self) -> Outcome | None:
        """A loaded child, or the reason the module cannot be loaded at all."""
        if self.load_failure is not None:
            return self.load_failure
        if self.loaded and self.sandbox.alive:
            return None
        self._take_prepared()
        outcome = self._take_early()
        if outcome is not None and outcome.ok and self.sandbox.cancelled():
            outcome = None  # cancelled meanwhile: the normal start reports it
        if outcome is not None:
            self._notice(self.sandbox, outcome)
        else:
            outcome = self._start(self.sandbox)
        if not outcome.ok:
            prefix = "" if outcome.kind == "sandbox" else "your module failed to load: "
            outcome.message = prefix + outcome.message
            self.sandbox.close()
            self.load_failure = outcome
            return outcome
        self.loaded = True
        return None

    def _timeout(self, case: Case) -> float:
        limit = case.timeout_s if self.case_timeout_s is None else self.case_timeout_s
        return min(limit, max(0.0, self.deadline - time.monotonic()))

    def _lost(self, outcome: Outcome) -> None:
        if outcome.child_lost:
            self.sandbox.close()
            self.loaded = False
            self.child_losses.append(outcome.kind)

    def _learner(self, case: Case, stopped: Callable[[], bool] | None = None,
                 ctx: RunContext | None = None) -> Outcome:
        """The learner's call of `case`; `stopped` says whether the grader itself killed the
        child meanwhile (an `Overtime`): then the child is replaced, but that is no loss of
        theirs (it does not count toward MAX_CHILD_LOSSES)."""
        failure = self._ensure_child()
        if failure is not None:
            return failure
        msg = {"op": "run", "case": to_wire(case), "ctx": to_wire(ctx or self.ctx)}
        outcome = self.sandbox.request(msg, self._timeout(case))
        if stopped is not None and stopped():
            self.sandbox.close()
            self.loaded = False
        else:
            self._lost(outcome)
        return outcome

    # -- the reference's side --------------------------------------------------------------
    def _expected(self, case: Case) -> tuple[bool, object]:
        """The reference's answer, computed here (never in the learner's process), passed
        through the codec so `check` compares values of the same kinds."""
        restore = cpu_threads_one(self.device, self.exercise.needs_torch)
        try:
            custom = getattr(self.grading, "expected", None)
            if callable(custom):
                value = custom(case, self.ctx)
            else:
                value = self.drive.run(self.reference, case, self.ctx)
            return True, codec.roundtrip(value)
        except Exception as exc:
            return False, f"{type(exc).__name__}: {exc}"
        finally:
            restore()

    def _prestart_reference(self, timed: list[Case]) -> None:
        """Start the reference's child (a torch import, seconds) while the learner's untimed
        cases still run, and run each of the `timed` cases to come once in it (what they load,
        e.g. a model pair, and first-call costs: seconds more), so the first timed case waits
        for neither (the child started for an earlier level is reused: only the warm-up runs)."""
        if self._reference_start is None:
            self._warmed.update(case.id for case in timed)
            self._reference_start = threading.Thread(target=self._reference_quietly,
                                                     args=(timed,), daemon=True)
            self._reference_start.start()

    def _reference_quietly(self, timed: list[Case]) -> None:
        # a failure (or a cancel) shows when the timed case asks for the child itself
        with contextlib.suppress(BaseException):
            child = self._reference_child()
            if isinstance(child, Sandbox):
                for case in timed:
                    if not case.timed_once:  # its one call is the measurement: no warm-up
                        out = self._batch(child, case, timed_seeds(1), self._timeout(case))
                        if out.ok and child.alive:
                            self._reference_warm.add(case.id)

    def _join_reference_start(self) -> None:
        if self._reference_start is not None:
            self._reference_start.join()
            self._reference_start = None

    def _reference_child(self) -> Sandbox | str:
        if self.reference_sandbox is not None and self.reference_sandbox.alive:
            return self.reference_sandbox
        warm = None
        if self._prepared_reference is not None:  # warmed ahead: only the load is left
            warm = self._prepared_reference.take_reference()
            self._prepared_reference = None
        self._reference_warm.clear()  # a new child: nothing has run in it yet
        self.reference_sandbox = warm or reference_sandbox(self.solution, self.boundary,
                                                           self.sandbox_options)
        self.reference_sandbox.cancelled = self.sandbox.cancelled
        outcome = self._start(self.reference_sandbox)
        if not outcome.ok:
            return f"the reference's sandbox failed to start ({outcome.message})"
        return self.reference_sandbox

    def _reference_call(self, case: Case, ctx: RunContext | None = None) -> Outcome | str:
        """The reference's call of `case` in its own child, as the learner's child runs it (a
        `timed_once` case: the answer to check and the time to compare at once), or why the
        child could not start."""
        self._join_reference_start()
        child = self._reference_child()
        if isinstance(child, str):
            return child
        msg = {"op": "run", "case": to_wire(case), "ctx": to_wire(ctx or self.ctx)}
        return child.request(msg, self._timeout(case))

    def _reference_busy(self, case: Case, ctx: RunContext,
                        learner_done: threading.Event) -> list[Outcome]:
        """Once the reference's first call beside a `timed_once` learner call is done, the same
        call again, back to back, until the learner's call returns: the learner's call then never
        runs alone on a machine the reference's left idle (which made a 4.3x ledger measure
        under 4x), and the reference's time is the median of several runs, not one."""
        out: list[Outcome] = []
        child = self.reference_sandbox
        msg = {"op": "run", "case": to_wire(case), "ctx": to_wire(ctx)}
        while child is not None and child.alive and not learner_done.is_set():
            got = child.request(msg, self._timeout(case))
            if not got.ok:
                break
            out.append(got)
        return out

    def _abandon(self, beside: Future[Outcome | str] | None,
                 busy: Future[list[Outcome]] | None = None) -> None:
        """The learner's call failed: reference calls still running beside it are killed (the
        child is respawned when next needed), not waited for."""
        if beside is None:
            return
        running = not beside.done() or (busy is not None and not busy.done())
        if running and self.reference_sandbox is not None:
            self.reference_sandbox.signal_kill()
        for future in (beside, busy):
            with contextlib.suppress(Exception):
                if future is not None:
                    future.result()

    def _time_once(self, learner: Outcome, reference: Outcome,
                   more: list[Outcome] | None = None) -> dict[str, float]:
        """A `timed_once` case's figures: its one call, against the median of the reference's
        calls that ran beside it (measured from here)."""
        on_cpu = self.device == "cpu"  # on a GPU the host's CPU time measures waiting
        runs = [reference, *(more or [])]
        return {**summarize([learner.elapsed_s], [r.elapsed_s for r in runs], 1, 1,
                            [learner.cpu_s] if on_cpu else None,
                            [r.cpu_s for r in runs] if on_cpu else None),
                "reference_runs": float(len(runs))}

    def _batch(self, sandbox: Sandbox, case: Case, seeds: list[int], timeout: float) -> Outcome:
        msg = {"op": "batch", "case": to_wire(case), "ctx": to_wire(self.ctx), "seeds": seeds}
        return sandbox.request(msg, timeout)

    def _calibrate(self, child: Sandbox, case: Case,
                   warm_up: bool = True) -> tuple[int, float] | Outcome:
        """Calls per batch for `child`: one discarded warm-up call (first calls pay for caches
        and page faults) unless the child has just run this case (`warm_up=False`: the
        learner's graded call, the reference's run ahead), then batches grown until one lasts
        BATCH_TARGET_S. Returns the size and the per-call time, or the failed Outcome."""
        if warm_up:
            warm = self._batch(child, case, timed_seeds(1), self._timeout(case))
            if not warm.ok:
                return warm
        calls: int | None = 1
        while True:
            assert calls is not None
            probe = self._batch(child, case, timed_seeds(calls), self._timeout(case))
            if not probe.ok:
                return probe
            grown = next_batch_size(calls, probe.elapsed_s)
            if grown is None:
                return calls, probe.elapsed_s / calls
            calls = grown

    def _time(self, case: Case, single_call_s: float) -> dict[str, float] | CaseResult:
        """Round trips of batches to the learner's child and to a reference child, ABBA, each
        output checked (a child that skips the work to look fast fails); ratios of per-call
        medians, each side's batch sized for its own speed."""
        self._join_reference_start()
        ref = self._reference_child()
        if isinstance(ref, str):
            return CaseResult(case, False, kind="grader_error", message=ref)
        sizes: dict[str, int] = {}
        call_s: dict[str, float] = {}
        # the learner's child has just answered this case (its graded call, before this)
        cold = {"reference": case.id not in self._reference_warm, "learner": False}
        for who, child in (("reference", ref), ("learner", self.sandbox)):
            got = self._calibrate(child, case, warm_up=cold[who])
            if isinstance(got, Outcome):
                return self._timing_failure(case, who, got)
            sizes[who], call_s[who] = got
        sizes = matched_batches(sizes, call_s)
        most = sizes["reference"]
        per_batch = self._timeout(case) + 4 * most * max(single_call_s, *call_s.values())
        learner: list[float] = []
        reference: list[float] = []
        learner_cpu: list[float] = []
        reference_cpu: list[float] = []
        warmup = self.exercise.timing_warmup
        for i in range(warmup + self.timing_repeats):
            seeds = timed_seeds(most)  # drawn now, while the learner's child is stopped
            results: dict[str, Outcome] = {}
            for who in interleaved_order(i):
                child = self.sandbox if who == "learner" else ref
                limit = min(per_batch, max(0.0, self.deadline - time.monotonic()))
                out = self._batch(child, case, seeds[: sizes[who]], limit)
                if not out.ok:
                    return self._timing_failure(case, who, out)
                results[who] = out
            wrong = self._check_batch(case, seeds, sizes, results["learner"],
                                      results["reference"])
            if wrong is not None:
                return wrong
            if i >= warmup:
                for who, times, cpu in (("learner", learner, learner_cpu),
                                        ("reference", reference, reference_cpu)):
                    times.append(results[who].elapsed_s)
                    cpu.append(results[who].cpu_s)
        on_cpu = self.device == "cpu"  # on a GPU the host's CPU time measures waiting
        return summarize(learner, reference, sizes["learner"], sizes["reference"],
                         learner_cpu if on_cpu else None, reference_cpu if on_cpu else None)

    def _timing_failure(self, case: Case, who: str, out: Outcome) -> CaseResult:
        if who == "reference":
            return CaseResult(case, False, kind="grader_error",
                              message=f"the reference failed while timing: {out.message}")
        self._lost(out)
        return CaseResult(case, False, kind=out.kind or "exception",
                          message=f"while timing: {out.message}",
                          traceback=out.traceback, output=out.output)

    def _check_batch(self, case: Case, seeds: list[int], sizes: dict[str, int], got: Outcome,
                     want: Outcome) -> CaseResult | None:
        """Each side must answer every call it was sent; every learner value is checked against
        the reference's for the same seed (the learner's seeds prefix the reference's)."""
        n = sizes["learner"]
        if len(got.values) != n or len(want.values) != sizes["reference"]:
            return CaseResult(case, False, kind="protocol",
                              message=f"while timing: {len(got.values)} results for {n} calls")
        for seed, g, w in zip(seeds[:n], got.values, want.values[:n], strict=True):
            try:
                verdict = self.grading.check(case, g, w)
            except Exception as exc:
                verdict = Verdict(False, f"{type(exc).__name__}: {exc}")
            if not verdict.passed:
                return CaseResult(case, False, kind="wrong", output=got.output,
                                  message=f"while timing (a run with seed {seed}): "
                                          f"{verdict.message}",
                                  expected=events.short_repr(w), got=events.short_repr(g))
        return None

    # -- one case --------------------------------------------------------------------------
    def case(self, case: Case, gate: dict[str, float], index: int = 1,
             total: int = 1) -> CaseResult:
        self.emit(events.CaseStarted(
            level=case.level, case=case.id, description=case.description,
            size=case.size, required=case.required, timed=case.timed, params=case.params,
            index=index, total=total,
        ))
        start = time.monotonic()
        result = self._grade_case(case, gate)
        result.duration_s = time.monotonic() - start
        self.any_passed = self.any_passed or result.passed
        common: dict[str, Any] = dict(
            level=case.level, case=case.id, required=case.required,
            duration_s=round(result.duration_s, 4), metrics=result.metrics, output=result.output,
        )
        if result.passed:
            self.emit(events.CasePassed(**common, note=result.message,
                                  report=case.report))
        else:
            self.emit(events.CaseFailed(
                **common, kind=result.kind, message=result.message,
                traceback=result.traceback, params=case.params, size=case.size,
                expected=result.expected, got=result.got, seed=self.seed, replay=self.replay,
            ))
        return result

    def _grade_case(self, case: Case, gate: dict[str, float]) -> CaseResult:
        if time.monotonic() >= self.deadline:
            return CaseResult(case, False, kind="run_timeout",
                              message=f"the run's {self.run_timeout_s:g} s budget ran out "
                                      "before this case")
        if len(self.child_losses) >= MAX_CHILD_LOSSES:
            kinds = ", ".join(sorted(set(self.child_losses)))
            return CaseResult(case, False, kind="skipped",
                              message=f"not run: your code was already stopped "
                                      f"{len(self.child_losses)} times in this run ({kinds}) — "
                                      "fix that first")
        # The learner first: a stub or a crash is reported without paying for the reference's
        # answer (computed lazily, only for a case about to be judged). Once some case has
        # passed, the learner is past the stub, and the answer is computed here on another
        # thread while their child runs (a second core; the child is a separate process).
        # A `timed_once` case's answer comes from the reference's child, whose call of the
        # case is also the measurement: it runs beside the learner's (their second core).
        once = case.timed_once
        if once and self.any_passed:
            self._settle()  # nothing of the grader's may run beside a measurement
        ahead = self._ahead(case) if self.any_passed and not once else None
        # a timed_once call's inputs come from a seed drawn now (same for both sides): a
        # solution cannot work out the timed stream while earlier cases run
        ctx = dataclasses.replace(self.ctx, seed=timed_seeds(1)[0]) if once else self.ctx
        beside = self._pool.submit(self._reference_call, case, ctx) if once and self.any_passed \
            else None
        learner_done = threading.Event()
        busy = self._pool.submit(self._reference_busy, case, ctx, learner_done) \
            if beside is not None else None
        overtime = Overtime.watch(self.sandbox, beside, gate)
        out = self._learner(case, overtime.stopped if overtime is not None else None, ctx)
        learner_done.set()
        first = beside.result() if beside is not None and beside.done() else None
        if (busy is not None and not busy.done() and isinstance(first, Outcome)
                and out.elapsed_s < 2 * first.elapsed_s and self.reference_sandbox is not None):
            # far under any gate: the reference's extra run in flight is not waited for
            self.reference_sandbox.signal_kill()
        single_call_s = out.elapsed_s
        if overtime is not None and overtime.fired and not out.ok:
            self._abandon(beside, busy)
            return CaseResult(case, False, kind="gate", output=out.output,
                              message=overtime.message(), metrics=overtime.metrics())
        if not out.ok and out.kind in NO_EXPECTED_KINDS:
            self._abandon(beside, busy)
            return CaseResult(case, False, kind=out.kind or "exception", message=out.message,
                              traceback=out.traceback, output=out.output)
        reference: Outcome | str = ""
        more: list[Outcome] = []
        if once:
            reference = beside.result() if beside is not None else self._reference_call(case,
                                                                                         ctx)
            with contextlib.suppress(Exception):
                more = busy.result() if busy is not None else []
            ok, expected = _answer(reference)
        else:
            ok, expected = ahead.result() if ahead is not None else self._expected(case)
        if not ok:
            return CaseResult(case, False, kind="grader_error",
                              message=f"the reference failed on this case ({expected}) — "
                                      "a grader bug, please report it")
        if not out.ok:
            return CaseResult(case, False, kind=out.kind or "exception", message=out.message,
                              traceback=out.traceback, output=out.output,
                              expected=events.short_repr(expected))
        try:
            verdict = self.grading.check(case, out.value, expected)
        except Exception as exc:
            verdict = Verdict(False, f"your result could not be checked "
                                     f"({type(exc).__name__}: {exc}); got "
                                     f"{events.short_repr(out.value, 200)}")
        result = CaseResult(case, verdict.passed, kind="" if verdict.passed else "wrong",
                            message=verdict.message, output=out.output,
                            expected=events.short_repr(expected),
                            got=events.short_repr(out.value), metrics=dict(verdict.metrics))
        if verdict.passed and case.timed:
            if isinstance(reference, Outcome):
                timing: dict[str, float] | CaseResult = self._time_once(out, reference, more)
            else:
                self._settle()  # nothing of the grader's may run beside a measurement
                timing = self._time(case, single_call_s)
            if isinstance(timing, CaseResult):
                return timing
            result.metrics.update(timing)
            self.emit(events.Metrics(level=case.level, case=case.id,
                                  metrics=result.metrics))
        if result.passed and gate:
            missed = check_gate(gate, result.metrics)
            if missed:
                result.passed, result.kind = False, "gate"
                result.message = f"correct, but too slow for this level: {missed}"
        return result

    def _skip_rest(self, level: int, rest: list[Case], stopper: CaseResult) -> list[CaseResult]:
        """The cases after a stopping failure: not run, announced in one event."""
        if not rest:
            return []
        reason = (f"not run: {stopper.case.id} failed with {stopper.kind} "
                  f"({stopper.message}) — the rest of the level would fail the same way")
        self.emit(events.CasesSkipped(level=level, cases=[c.id for c in rest], reason=reason,
                                      required=sum(c.required for c in rest)))
        return [CaseResult(c, False, kind="skipped", message=reason) for c in rest]

    # -- one level -------------------------------------------------------------------------
    def level(self, number: int) -> LevelResult:
        level = self.exercise.level(number)
        start = time.monotonic()
        cases = cheapest_first(self.grading.cases(number, self.seed))
        # What is alive now (imports: torch's ~2·10^5 objects) is kept out of the garbage
        # collector until grade() returns: a full collection walks them all (~0.15 s), and
        # decoding and checking a law case's 10^5 values sets off several. grade() unfreezes
        # them, so a long-lived process (the TUI's grader) still collects their garbage later.
        gc.freeze()
        results: list[CaseResult] = []
        for i, c in enumerate(cases):
            if self.sandbox.cancelled():
                raise Cancelled()
            result = self.case(c, level.gate, index=i + 1, total=len(cases))
            results.append(result)
            timed = [later for later in cases[i + 1:] if later.timed
                     and later.id not in self._warmed]
            if result.passed and timed:
                self._prestart_reference(timed)
            if result.kind in STOP_LEVEL_KINDS or self.load_failure is not None:
                results += self._skip_rest(number, cases[i + 1:], result)
                break
        lvl = LevelResult(number, results, time.monotonic() - start)
        smallest = lvl.smallest_failure()
        self.emit(events.LevelSummary(
            level=number, title=level.title, passed=lvl.passed,
            cases=len(results), passed_cases=sum(r.passed for r in results),
            failed_required=sum(not r.passed and r.case.required for r in results),
            failed_optional=sum(not r.passed and not r.case.required for r in results),
            smallest_failure=None if smallest is None else {
                "case": smallest.case.id, "size": smallest.case.size, "kind": smallest.kind,
                "message": smallest.message, "params": smallest.case.params,
            },
            metrics=lvl.metrics(), duration_s=round(lvl.duration_s, 3),
            case_metrics={r.case.id: r.metrics for r in results if r.metrics},
        ))
        return lvl


def _answer(reference: Outcome | str) -> tuple[bool, object]:
    """A reference child's call (or why its child could not start) as (ok, its value or why
    it failed), the form `_expected` gives."""
    if isinstance(reference, str):
        return False, reference
    return (True, reference.value) if reference.ok else (False, reference.message)


def _import_behind(*modules: str) -> threading.Thread:
    """Import `modules` on a thread (a failure shows when they are imported for real)."""
    def work() -> None:
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def grade(
    exercise: Exercise,
    solution: Path,
    *,
    levels: list[int] | None = None,
    device: str = "auto",
    seed: int | None = None,
    emit: Emit | None = None,
    memory_mb: int | None = None,
    run_timeout_s: float | None = None,
    timing_repeats: int | None = None,
    store: bool = True,
    cancel: Callable[[], bool] | None = None,
    case_timeout_s: float | None = None,
    load_timeout_s: float | None = None,
    models: dict[str, str] | None = None,
    confine: bool | None = None,
    recorder: Recorder | None = None,
    attempt_metrics: dict[str, float] | None = None,
    prepared: Prepared | None = None,
) -> GradeResult:
    """Grade `solution` on `levels` (default: all) and return the results, with every event it
    emitted (`GradeResult.events`; see events.py).

    Blocking: the TUI runs it in a worker thread. `cancel` (e.g. `threading.Event().is_set`) is
    polled every few milliseconds; once it returns True the child is killed and
    `lab.grader.isolation.Cancelled` is raised (no summary event, nothing stored).
    `confine=False` skips the namespaces (tests of the fallback path use it); the default is on
    unless the environment sets DOJO_LAB_NO_CONFINE=1 (an escape hatch for a machine where they
    get in the way). The result is
    recorded once, here, through `recorder` (default: the learner's database unless
    `store=False`). `attempt_metrics` (e.g. an interview rehearsal's clock) are stored with
    every graded level's figures.
    """
    written: list[events.Event] = []
    sink = emit

    def write_event(event: events.Event) -> None:
        written.append(event)
        if sink is not None:
            sink(event)

    all_levels = exercise.level_numbers
    try:
        plan = _plan(exercise, solution, levels, device, memory_mb, models, confine)
    except UsageError:
        if prepared is not None:
            prepared.close()
        raise
    exercise, chosen, resolved, note = plan.exercise, plan.levels, plan.device, plan.device_note
    models = plan.models
    seed = secrets.randbelow(1_000_000) if seed is None else seed
    started = time.monotonic()
    # The store (sqlalchemy: ~0.5 s) is imported while the children start, not after the verdict.
    imports = (_import_behind("scheduler.store", "lab.rebuild")
               if recorder is not None or store else None)
    run = _Grading(
        exercise, solution, resolved, seed, write_event,
        memory_mb=plan.memory_mb,
        run_timeout_s=run_timeout_s or exercise.run_timeout_s,
        timing_repeats=timing_repeats or exercise.timing_repeats,
        case_timeout_s=case_timeout_s,
        load_timeout_s=load_timeout_s,
        model_paths=models,
        confine=plan.confine,
        prepared=prepared,
    )
    run.imports = imports
    run.replay = replay_command(exercise.id, chosen, seed, all_levels, models)
    if cancel is not None:
        run.sandbox.cancelled = cancel
    write_event(events.RunStarted(
        exercise=exercise.id, title=exercise.title, solution=str(solution),
        device=resolved, device_note=note, seed=seed, replay=run.replay,
        levels=[{"number": n, "title": exercise.level(n).title, "gate": exercise.level(n).gate}
                for n in chosen],
    ))
    try:
        level_results = [run.level(n) for n in chosen]
    finally:
        run.close()
        gc.unfreeze()
    result = GradeResult(exercise.id, resolved, seed, solution, level_results,
                         time.monotonic() - started, sandboxes_started=run.sandbox.spawned,
                         events=written, attempt_metrics=dict(attempt_metrics or {}))
    if recorder is None and store:
        from lab.grader.record import Recorder

        recorder = Recorder()
    if recorder is not None:
        result.stored, result.store_error = recorder.record(result)
    write_event(events.Summary(
        exercise=exercise.id, device=resolved, seed=seed, passed=result.passed,
        levels={str(lvl.level): lvl.passed for lvl in level_results},
        duration_s=round(result.duration_s, 3), replay=run.replay, stored=result.stored,
        store_error=result.store_error,
        next_level=next_level(exercise, chosen) if result.passed else None,
    ))
    return result


def next_level(exercise: Exercise, graded: list[int]) -> dict[str, Any] | None:
    """The level after the highest one graded ({number, title, command}), None after the last."""
    later = [n for n in exercise.level_numbers if n > max(graded)]
    if not later:
        return None
    level = exercise.level(later[0])
    return {"number": level.number, "title": level.title,
            "command": f"dojo lab start {exercise.id} --level {level.number}"}
