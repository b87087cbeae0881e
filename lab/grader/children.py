"""The grading's children: the learner's sandbox and the reference's timing sandbox, how each
starts (a load timeout retried once), and a child prepared and warmed ahead of a grading
(`prepare`: spawned, torch imported) that the grading adopts."""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.exercises import Exercise
from lab.grader import boundary, events
from lab.grader.api import Case, RunContext, to_wire, warm_drive
from lab.grader.isolation import ChildReply, Sandbox
from lab.grader.plan import Emit, GradeOptions, UsageError, plan_grading, timed_seeds

REFERENCE_PACKAGE = "lab.reference"  # grading.REFERENCE is lab.reference.<exercise package>
# exercises whose drive connects processes over TCP (torch.distributed's ranks, on loopback):
# where Landlock confines the grading, TCP stays open for them (namespaces give a private `lo`)
NETWORK_EXERCISES = frozenset({"tensor-parallel"})


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
        needs_torch=exercise.needs_torch,
        network=exercise.id in NETWORK_EXERCISES,
        device=device,
    )


def reference_guess(exercise: Exercise) -> str:
    """The reference module by convention (checked against grading.REFERENCE once that module
    is imported): known before the grading module, so the child can start first."""
    return f"{REFERENCE_PACKAGE}.{exercise.module.rsplit('.', 1)[-1]}"


def learner_sandbox(exercise: Exercise, solution: Path, reference: str,
                    options: dict[str, Any]) -> tuple[boundary.Boundary, Sandbox]:
    found = boundary.compute(exercise.module, reference)
    return found, Sandbox(solution=solution, load=found.load_message(trusted=False), **options)


def reference_sandbox(solution: Path, found: boundary.Boundary,
                      options: dict[str, Any]) -> Sandbox:
    """The grader's own child for timing the reference (trusted: nothing hidden from it)."""
    return Sandbox(solution=solution, load=found.load_message(trusted=True), **options)


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
    outcome: ChildReply | None = None
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

    def wait(self) -> ChildReply | None:
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


def prepare(exercise: Exercise, solution: Path, options: GradeOptions | None = None, *,
            current: Prepared | None = None) -> Prepared | None:
    """Start the learner's child for a grading that is likely to come (`dojo lab watch`
    between saves, the TUI's grader between presses of g, or as soon as a torch lab is
    selected): the next grading with the same options then skips the child's start and both
    processes' torch imports. None when there is nothing to gain (no torch) or the options
    would not grade. `current`, an earlier Prepared, is returned as it is when it would serve
    the same grading, else closed."""
    try:
        plan = plan_grading(exercise, solution, options or GradeOptions())
    except UsageError:
        plan = None
    if plan is None or not plan.exercise.needs_torch:
        if current is not None:  # a pure-Python child starts in a fraction of a second anyway
            current.close()
        return None
    shape = sandbox_options(plan.exercise, plan.device, plan.memory_mb,
                            (options or GradeOptions()).load_timeout_s, plan.confine)
    guess = reference_guess(plan.exercise)
    key = child_key(plan.exercise, solution, plan.device, guess, shape)
    if current is not None:
        if current.key == key and current.usable:
            return current
        current.close()
    found, sandbox = learner_sandbox(plan.exercise, solution, guess, shape)
    return Prepared(key, found, sandbox, plan.exercise, plan.device, levels=plan.levels,
                    options=shape)


class Children:
    """The grading's side of its children (a base of `runner._Grading`): starting, adopting,
    calling and replacing the learner's child and the reference's timing child."""

    exercise: Exercise
    solution: Path
    device: str
    emit: Emit
    ctx: RunContext
    deadline: float
    run_timeout_s: float
    case_timeout_s: float | None
    sandbox_options: dict[str, Any]
    boundary: boundary.Boundary
    sandbox: Sandbox
    reference_sandbox: Sandbox | None
    notified: bool
    loaded: bool
    load_failure: ChildReply | None
    child_losses: list[str]
    _early: threading.Thread | None
    _early_outcome: ChildReply | None
    _prepared: Prepared | None
    _prepared_reference: Prepared | None
    _reference_start: threading.Thread | None
    _warmed: set[str]
    _reference_warm: set[str]

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

    def _take_early(self) -> ChildReply | None:
        """The early start's outcome (waiting for it), once; None if there was none."""
        if self._early is None:
            return None
        self._early.join()
        self._early = None
        outcome, self._early_outcome = self._early_outcome, None
        return outcome

    # -- the learner's side ----------------------------------------------------------------
    def _start(self, sandbox: Sandbox, notify: bool = True) -> ChildReply:
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

    def _notice(self, sandbox: Sandbox, outcome: ChildReply) -> None:
        """Once per run: which confinement the learner's code runs under (and what it lacks)."""
        if outcome.ok and not self.notified:
            self.notified = True
            lacking = f" (without {'; '.join(sandbox.missing)})" if sandbox.missing else ""
            self.emit(events.Notice(message=f"sandbox: {sandbox.mode or 'unknown'}{lacking}"))

    def _ensure_child(self) -> ChildReply | None:
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

    def _case_limit(self, case: Case) -> float:
        return case.timeout_s if self.case_timeout_s is None else self.case_timeout_s

    def _timeout(self, case: Case) -> float:
        """The case's own limit, cut to what is left of the run's budget."""
        return min(self._case_limit(case), max(0.0, self.deadline - time.monotonic()))

    def _lost(self, outcome: ChildReply) -> None:
        if outcome.child_lost:
            self.sandbox.close()
            self.loaded = False
            self.child_losses.append(outcome.kind)

    def _learner(self, case: Case, stopped: Callable[[], bool] | None = None,
                 ctx: RunContext | None = None) -> ChildReply:
        """The learner's call of `case`; `stopped` says whether the grader itself killed the
        child meanwhile (an `Overtime`): then the child is replaced, but that is no loss of
        theirs (it does not count toward MAX_CHILD_LOSSES)."""
        failure = self._ensure_child()
        if failure is not None:
            return failure
        msg = {"op": "run", "case": to_wire(case), "ctx": to_wire(ctx or self.ctx)}
        timeout, limit = self._timeout(case), self._case_limit(case)
        outcome = self.sandbox.request(msg, timeout)
        if stopped is not None and stopped():
            self.sandbox.close()
            self.loaded = False
        else:
            self._lost(outcome)
        if outcome.kind == "timeout" and timeout < limit:  # the run's budget, not the case's
            outcome.message = (
                f"no answer before the run's {self.run_timeout_s:g} s budget ran out (this "
                f"case's own limit, {limit:g} s, was not reached) — correct but slow code "
                "fails this way too: every case of the run shares that budget (stopped)")
        return outcome

    # -- the reference's side --------------------------------------------------------------
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

    def _reference_call(self, case: Case, ctx: RunContext | None = None) -> ChildReply | str:
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
                        learner_done: threading.Event) -> list[ChildReply]:
        """Once the reference's first call beside a `timed_once` learner call is done, the same
        call again, back to back, until the learner's call returns: the learner's call then never
        runs alone on a machine the reference's left idle (which made a 4.3x ledger measure
        under 4x), and the reference's time is the median of several runs, not one."""
        out: list[ChildReply] = []
        child = self.reference_sandbox
        msg = {"op": "run", "case": to_wire(case), "ctx": to_wire(ctx)}
        while child is not None and child.alive and not learner_done.is_set():
            got = child.request(msg, self._timeout(case))
            if not got.ok:
                break
            out.append(got)
        return out

    def _abandon(self, beside: Future[ChildReply | str] | None,
                 busy: Future[list[ChildReply]] | None = None) -> None:
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

    def _batch(self, sandbox: Sandbox, case: Case, seeds: list[int], timeout: float) -> ChildReply:
        msg = {"op": "batch", "case": to_wire(case), "ctx": to_wire(self.ctx), "seeds": seeds}
        return sandbox.request(msg, timeout)

