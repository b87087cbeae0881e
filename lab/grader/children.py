"""A grading run's children: the learner's sandbox, the reference's timing sandbox and, with the
learner's own checkpoints, the models child that computes expected values; how each starts (a
load timeout retried once), is called and replaced; made as `lab.grader.spawn` says, adopted
from a child prepared ahead when one fits."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from lab.grader import events
from lab.grader.api import Case, RunContext, to_wire
from lab.grader.isolation import ChildReply, Sandbox
from lab.grader.plan import Emit, GradeOptions, GradingPlan, timed_seeds
from lab.grader.spawn import (
    Prepared,
    child_key,
    learner_sandbox,
    models_sandbox,
    reference_guess,
    reference_sandbox,
    sandbox_options,
)


class Children:
    """A grading run's children, owned here: the learner's sandbox (adopted from a `Prepared`,
    or started early while the grader imports the grading module), the reference's timing
    child and the models child (`expected`); how each is started, called, replaced and closed.
    The run holds one
    (`runner._Run.children`), and so does its measurer."""

    def __init__(self, plan: GradingPlan, solution: Path, options: GradeOptions, ctx: RunContext,
                 emit: Emit) -> None:
        self.exercise, self.solution, self.device = plan.exercise, solution, plan.device
        self.ctx, self.emit = ctx, emit
        self.case_timeout_s = options.case_timeout_s
        self.deadline = math.inf  # the run's budget: set by `start_clock`
        self.run_timeout_s = math.inf
        self.sandbox_options = sandbox_options(plan.exercise, plan.device, plan.memory_mb,
                                               options.load_timeout_s, plan.confine,
                                               tuple(sorted(plan.models.values())))
        self.reference_sandbox: Sandbox | None = None  # started for the first timed case
        # expected values where the learner's own checkpoints are read (`expected`): started
        # for the first, one request at a time; a failure there ends its use for the run
        self.models_sandbox: Sandbox | None = None
        self.models_failure: ChildReply | None = None
        self._models_lock = threading.Lock()
        self.notified = False
        self.loaded = False
        self.load_failure: ChildReply | None = None
        self.losses: list[str] = []  # timeouts, crashes, memory kills of the learner's child
        self.warmed: set[str] = set()  # timed cases run once in the reference's child ahead
        self.reference_warm: set[str] = set()  # ... and those runs that succeeded in its child
        self._reference_start: threading.Thread | None = None
        # set by `close`: a reference child still starting ahead (a torch import, seconds of
        # CPU) is cancelled instead of awaited, e.g. when the learner's case fails right after
        # the prestart
        self._closing = threading.Event()
        self._early: threading.Thread | None = None
        self._early_outcome: ChildReply | None = None
        self._prepared: Prepared | None = None
        self._prepared_reference: Prepared | None = None  # its timing child, see Prepared
        # The learner's child loads (torch, their module) while this process imports the
        # grading module (torch too): the two imports overlap instead of adding up. The
        # reference's module name is guessed by convention and checked once grading is loaded
        # (`use_reference`). A child prepared ahead (`prepare`: spawned, torch imported) is
        # adopted when nothing that shapes it differs; it then only loads the learner's file.
        self.guess = reference_guess(plan.exercise)
        prepared = options.prepared
        key = child_key(plan.exercise, solution, plan.device, self.guess, self.sandbox_options)
        if prepared is not None and prepared.key == key:
            self.boundary, self.sandbox = prepared.boundary, prepared.sandbox
            self._prepared = self._prepared_reference = prepared
        else:
            if prepared is not None:
                prepared.close()
            self.sandbox = self._learner_sandbox(self.guess)
            if plan.exercise.needs_torch:
                self._early = threading.Thread(target=self._start_early, daemon=True)
                self._early.start()

    def use_reference(self, module: str) -> None:
        """The grading's REFERENCE, once imported: a child started for another guess is
        replaced by one with that boundary."""
        if module == self.guess:
            return
        self._take_early()
        self._take_prepared()
        self._drop_prepared_reference()
        self.sandbox.close()
        self.sandbox = self._learner_sandbox(module)
        self._early_outcome = None

    def start_clock(self, run_timeout_s: float) -> None:
        """The run's budget starts now (after the imports)."""
        self.run_timeout_s = run_timeout_s
        self.deadline = time.monotonic() + run_timeout_s

    def abort(self) -> None:
        """The run could not begin (its grading module failed to import): nothing left."""
        self._take_early()
        self.sandbox.close()

    def close(self) -> None:
        self._closing.set()
        self.sandbox.signal_kill()  # a start or warm-up in flight ends now, never awaited
        self._take_early()
        self._take_prepared()
        if self._reference_start is not None and self.reference_sandbox is not None:
            self.reference_sandbox.signal_kill()  # a warm-up run in flight ends now
        self.join_reference_start()
        self._drop_prepared_reference()
        self.sandbox.close()
        if self.reference_sandbox is not None:
            self.reference_sandbox.close()
        if self.models_sandbox is not None:
            self.models_sandbox.signal_kill()  # an expected value in flight ends now
            with self._models_lock:
                self.models_sandbox.close()

    def kill_reference_call(self) -> None:
        """End the reference child's call in flight (it is respawned when next needed)."""
        if self.reference_sandbox is not None:
            self.reference_sandbox.signal_kill()

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

    def timeout(self, case: Case) -> float:
        """The case's own limit, cut to what is left of the run's budget."""
        return min(self._case_limit(case), max(0.0, self.deadline - time.monotonic()))

    def lost(self, outcome: ChildReply) -> None:
        if outcome.child_lost:
            self.sandbox.close()
            self.loaded = False
            self.losses.append(outcome.kind)

    def learner(self, case: Case, stopped: Callable[[], bool] | None = None,
                 ctx: RunContext | None = None) -> ChildReply:
        """The learner's call of `case`; `stopped` says whether the grader itself killed the
        child meanwhile (an `Overtime`): then the child is replaced, but that is no loss of
        theirs (it does not count toward MAX_CHILD_LOSSES)."""
        failure = self._ensure_child()
        if failure is not None:
            return failure
        msg = self.message("run", case, ctx or self.ctx)
        timeout, limit = self.timeout(case), self._case_limit(case)
        outcome = self.sandbox.request(msg, timeout)
        if stopped is not None and stopped():
            self.sandbox.close()
            self.loaded = False
        else:
            self.lost(outcome)
        if outcome.kind == "timeout" and timeout < limit:  # the run's budget, not the case's
            outcome.message = (
                f"no answer before the run's {self.run_timeout_s:g} s budget ran out (this "
                f"case's own limit, {limit:g} s, was not reached) — correct but slow code "
                "fails this way too: every case of the run shares that budget (stopped)")
        return outcome

    # -- the reference's side --------------------------------------------------------------
    def prestart_reference(self, timed: list[Case]) -> None:
        """Start the reference's child (a torch import, seconds) while the learner's untimed
        cases still run, and run each of the `timed` cases to come once in it (what they load,
        e.g. a model pair, and first-call costs: seconds more), so the first timed case waits
        for neither (the child started for an earlier level is reused: only the warm-up runs)."""
        if self._reference_start is None:
            self.warmed.update(case.id for case in timed)
            self._reference_start = threading.Thread(target=self._reference_quietly,
                                                     args=(timed,), daemon=True)
            self._reference_start.start()

    def _reference_quietly(self, timed: list[Case]) -> None:
        # a failure (or a cancel) shows when the timed case asks for the child itself
        with contextlib.suppress(BaseException):
            child = self.reference_child()
            if isinstance(child, Sandbox):
                for case in timed:
                    if not case.timed_once:  # its one call is the measurement: no warm-up
                        out = self.batch(child, case, timed_seeds(1), self.timeout(case))
                        if out.ok and child.alive:
                            self.reference_warm.add(case.id)

    def join_reference_start(self) -> None:
        if self._reference_start is not None:
            self._reference_start.join()
            self._reference_start = None

    def reference_child(self) -> Sandbox | str:
        if self.reference_sandbox is not None and self.reference_sandbox.alive:
            return self.reference_sandbox
        warm = None
        if self._prepared_reference is not None:  # warmed ahead: only the load is left
            warm = self._prepared_reference.take_reference()
            self._prepared_reference = None
        self.reference_warm.clear()  # a new child: nothing has run in it yet
        self.reference_sandbox = warm or reference_sandbox(self.solution, self.boundary,
                                                           self.sandbox_options)
        learners = self.sandbox.cancelled
        self.reference_sandbox.cancelled = lambda: learners() or self._closing.is_set()
        outcome = self._start(self.reference_sandbox)
        if not outcome.ok:
            return f"the reference's sandbox failed to start ({outcome.message})"
        return self.reference_sandbox

    def reference_call(self, case: Case, ctx: RunContext | None = None) -> ChildReply | str:
        """The reference's call of `case` in its own child, as the learner's child runs it (a
        `timed_once` case: the answer to check and the time to compare at once), or why the
        child could not start."""
        self.join_reference_start()
        child = self.reference_child()
        if isinstance(child, str):
            return child
        return child.request(self.message("run", case, ctx or self.ctx), self.timeout(case))

    def reference_busy(self, case: Case, ctx: RunContext,
                        learner_done: threading.Event) -> list[ChildReply]:
        """Once the reference's first call beside a `timed_once` learner call is done, the same
        call again, back to back, until the learner's call returns: the learner's call then never
        runs alone on a machine the reference's left idle (which made a 4.3x ledger measure
        under 4x), and the reference's time is the median of several runs, not one."""
        out: list[ChildReply] = []
        child = self.reference_sandbox
        msg = self.message("run", case, ctx)
        while child is not None and child.alive and not learner_done.is_set():
            got = child.request(msg, self.timeout(case))
            if not got.ok:
                break
            out.append(got)
        return out

    def abandon(self, beside: Future[ChildReply | str] | None,
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

    # -- expected values from the learner's own checkpoints ---------------------------------
    def expected(self, case: Case, grading: str, ctx: RunContext) -> ChildReply:
        """The expected value of `case` (grading module `grading`; `ctx`: the case's context,
        its seed included) computed in the models child: the learner's own checkpoints are
        loaded only there, under the sandbox's memory cap, never in this process. A child that
        could not start, or was stopped (memory, time), gives that reply to every later case
        of the run without trying again."""
        with self._models_lock:
            if self.models_failure is not None:
                return self.models_failure
            child = self.models_sandbox
            if child is None or not child.alive:
                child = self.models_sandbox = models_sandbox(self.solution, self.boundary,
                                                             self.sandbox_options)
                child.cancelled = self.sandbox.cancelled
                outcome = self._start(child, notify=False)
                if not outcome.ok:
                    self.models_failure = outcome
                    return outcome
            msg = {"op": "expected", "grading": grading, "case": to_wire(case),
                   "ctx": to_wire(ctx)}
            outcome = child.request(msg, self.timeout(case))
            if outcome.child_lost:
                child.close()
                self.models_failure = outcome
            return outcome

    def batch(self, sandbox: Sandbox, case: Case, seeds: list[int], timeout: float) -> ChildReply:
        return sandbox.request(self.message("batch", case, self.ctx, seeds), timeout)

    @staticmethod
    def message(op: str, case: Case, ctx: RunContext, seeds: list[int] | None = None,
                **more: Any) -> dict[str, Any]:
        """A request for calls of `case` (`run`: the graded call, on `ctx.seed`; `batch` and
        `timed`: the stopwatch's calls, on `seeds`). The seeds travel apart from the context,
        whose own seed is always 0: the child's driver (`sandbox.Child.calls`) holds the same
        context for a checked call and a timed one."""
        return {"op": op, "case": to_wire(case), "ctx": to_wire(dataclasses.replace(ctx, seed=0)),
                "seeds": [ctx.seed] if seeds is None else seeds, **more}

