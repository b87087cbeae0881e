"""Grade a learner's file against an exercise: cases from a seed, reference answers computed
here, the learner's answers computed in a sandbox child, checks and timing done here, events
emitted as it goes. The child only ever returns plain data (`lab.grader.codec`).

`grade()` is what the CLI, the watcher and the TUI call; it never raises for anything the
learner's code does (that becomes a failed case), only for usage errors (unknown level, missing
file, unavailable device). Its parts: `plan` (the options resolved, the cases' order),
`children` (the sandboxes, prepared and warmed ahead), `measure` (timing) and this module (the
run: each case judged, each level summarised, events emitted).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import importlib
import secrets
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lab.exercises import Exercise
from lab.grader import codec, events
from lab.grader.api import Case, RunContext, Verdict
from lab.grader.children import (
    Prepared,
    child_key,
    prepare,
    reference_guess,
    sandbox_options,
)
from lab.grader.isolation import Cancelled, ChildReply, Sandbox
from lab.grader.measure import Measuring, Overtime, check_gate
from lab.grader.plan import (
    MAX_CHILD_LOSSES,
    NO_EXPECTED_KINDS,
    STOP_LEVEL_KINDS,
    Emit,
    GradeOptions,
    Plan,
    UsageError,
    cheapest_first,
    next_level,
    plan_grading,
    replay_command,
    timed_seeds,
)
from lab.grader.results import CaseResult, GradeResult, LevelResult
from lab.grader.timing import cpu_threads_one

__all__ = ["GradeOptions", "GradeResult", "Prepared", "UsageError", "grade", "prepare"]


def _shown(expected: Any) -> str:
    """The reference's answer as the report shows it; "" when the level has none to show (a
    statistical case whose law is computed in `check`: its `expected` is None)."""
    return "" if expected is None else events.short_repr(expected)


class _Grading(Measuring):
    """State of one grading run (kept out of `grade()` to keep each step small; its children
    and its timing are the bases `Children` and `Measuring`)."""

    def __init__(self, plan: Plan, solution: Path, seed: int, emit: Emit,
                 options: GradeOptions) -> None:
        exercise, device, prepared = plan.exercise, plan.device, options.prepared
        model_paths = plan.models
        run_timeout_s = options.run_timeout_s or exercise.run_timeout_s
        self.exercise = exercise
        self.case_timeout_s = options.case_timeout_s
        self.child_losses: list[str] = []
        self.solution = solution
        self.device = device
        self.seed = seed
        self.emit = emit
        self.timing_repeats = options.timing_repeats or exercise.timing_repeats
        self.event_timing = (device == "cuda" if options.event_timing is None
                             else options.event_timing)
        self.ctx = RunContext(device=device, seed=seed, dtype=exercise.dtype,
                              model_paths={**(exercise.model_paths or {}),
                                           **(model_paths or {})} or None)
        self.replay = ""
        self.notified = False
        self.sandbox_options = sandbox_options(exercise, device, plan.memory_mb,
                                               options.load_timeout_s, plan.confine)
        self.reference_sandbox: Sandbox | None = None  # started for the first timed case
        self.any_passed = False
        self._reference_start: threading.Thread | None = None
        self._warmed: set[str] = set()  # timed cases run once in the reference's child ahead
        self._reference_warm: set[str] = set()  # ... and those runs that succeeded in its child
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reference")
        self._pending: list[Future[tuple[bool, object]]] = []
        self.load_failure: ChildReply | None = None
        self.loaded = False
        # The learner's child loads (torch, their module) while this process imports the
        # grading module (torch too): the two imports overlap instead of adding up. The
        # reference's module name is guessed by convention and checked once grading is loaded.
        # A child prepared ahead (`prepare`: spawned, torch imported) is adopted when nothing
        # that shapes it differs; it then only loads the learner's file.
        guess = reference_guess(exercise)
        self._early: threading.Thread | None = None
        self._early_outcome: ChildReply | None = None
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

    def _ahead(self, case: Case) -> Future[tuple[bool, object]]:
        future = self._pool.submit(self._expected, case)
        self._pending.append(future)
        return future

    def _settle(self) -> None:
        """Wait for reference answers still being computed (a case the learner failed)."""
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
        if (busy is not None and not busy.done() and isinstance(first, ChildReply)
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
        reference: ChildReply | str = ""
        more: list[ChildReply] = []
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
                              expected=_shown(expected))
        try:
            verdict = self.grading.check(case, out.value, expected)
        except Exception as exc:
            verdict = Verdict(False, f"your result could not be checked "
                                     f"({type(exc).__name__}: {exc}); got "
                                     f"{events.short_repr(out.value, 200)}")
        result = CaseResult(case, verdict.passed, kind="" if verdict.passed else "wrong",
                            message=verdict.message, output=out.output,
                            expected=_shown(expected),
                            got=events.short_repr(out.value), metrics=dict(verdict.metrics))
        if verdict.passed and case.timed:
            if isinstance(reference, ChildReply):
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


def _answer(reference: ChildReply | str) -> tuple[bool, object]:
    """A reference child's call (or why its child could not start) as (ok, its value or why
    it failed), the form `_expected` gives."""
    if isinstance(reference, str):
        return False, reference
    return (True, reference.value) if reference.ok else (False, reference.message)


def grade(exercise: Exercise, solution: Path,
          options: GradeOptions | None = None) -> GradeResult:
    """Grade `solution` on `options.levels` (default: all) and return the results, with every
    event it emitted (`GradeResult.events`; see events.py).

    Blocking: the TUI runs it in a worker thread (see `GradeOptions` for cancelling it and
    adopting a child prepared ahead). It stores nothing: its closing `Summary` says
    `stored=False`, and the lab service (`trainer.core.lab.grade_recorded`) that records the
    result sends that summary on with what storing did.
    """
    options = options or GradeOptions()
    prepared = options.prepared
    written: list[events.Event] = []
    sink = options.emit

    def write_event(event: events.Event) -> None:
        written.append(event)
        if sink is not None:
            sink(event)

    all_levels = exercise.level_numbers
    try:
        plan = plan_grading(exercise, solution, options)
    except UsageError:
        if prepared is not None:
            prepared.close()
        raise
    exercise, chosen, resolved, note = plan.exercise, plan.levels, plan.device, plan.device_note
    models = plan.models
    seed = secrets.randbelow(1_000_000) if options.seed is None else options.seed
    started = time.monotonic()
    run = _Grading(plan, solution, seed, write_event, options)
    run.replay = replay_command(exercise.id, chosen, seed, all_levels, models)
    if options.cancel is not None:
        run.sandbox.cancelled = options.cancel
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
                         events=written, attempt_metrics={
                             **(options.attempt_metrics or {}),
                             # a grading the learner chose to run without a sandbox says so
                             **({} if plan.confine else {"unconfined": 1.0})})
    write_event(events.Summary(
        exercise=exercise.id, device=resolved, seed=seed, passed=result.passed,
        levels={str(lvl.level): lvl.passed for lvl in level_results},
        duration_s=round(result.duration_s, 3), replay=run.replay, stored=False,
        store_error="",
        next_level=next_level(exercise, chosen) if result.passed else None,
    ))
    return result


