"""Grade a learner's file against an exercise: cases from a seed, reference answers computed
here, the learner's answers computed in a sandbox child, checks and timing done here, events
emitted as it goes. The child only ever returns plain data (`lab.grader.codec`).

`grade()` is what the CLI, the watcher and the TUI call; it never raises for anything the
learner's code does (that becomes a failed case), only for usage errors (unknown level, missing
file, unavailable device). A run (`_Run`) is composed, not inherited: it owns its `Children`
(`children`: the sandboxes, adopted from a child prepared ahead by `prepare`) and a `Measurer`
(`measure`: timing), reads its options from one `GradeOptions` (`plan`), and judges each case
in four named steps (the learner's call, the expected value, the judge, the timing).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.exercises import Exercise
from lab.grader import codec, events, limits
from lab.grader.api import Case, RunContext, Verdict
from lab.grader.children import Children
from lab.grader.expected_cache import ExpectedCache, case_key, fixed_cases, usable_folder
from lab.grader.isolation import Cancelled, ChildReply
from lab.grader.measure import Measurer, Overtime, check_gate
from lab.grader.plan import (
    MAX_CHILD_LOSSES,
    NO_EXPECTED_KINDS,
    STOP_LEVEL_KINDS,
    Emit,
    GradeOptions,
    GradingPlan,
    UsageError,
    cheapest_first,
    checked_seed,
    next_level,
    plan_grading,
    replay_command,
    timed_seeds,
)
from lab.grader.results import CaseResult, GradeResult, LevelResult
from lab.grader.spawn import (
    Prepared,
    child_key,
    learner_sandbox,
    reference_guess,
    sandbox_options,
)
from lab.grader.timing import cpu_threads_one

__all__ = ["GradeOptions", "GradeResult", "Prepared", "UsageError", "grade", "prepare"]


def _shown(expected: Any) -> str:
    """The reference's answer as the report shows it; "" when the level has none to show (a
    statistical case whose law is computed in `check`: its `expected` is None)."""
    return "" if expected is None else events.short_repr(expected)


@dataclass
class _Call:
    """The learner's call of one case, and what ran beside it: the reference's answer computed
    ahead on a thread (`ahead`), or for a `timed_once` case the reference child's call of the
    same inputs (`beside`, then `busy`: its repeats until the learner's call returned) and the
    watch that stops a call that has already lost (`overtime`)."""

    out: ChildReply
    ctx: RunContext
    ahead: Future[tuple[bool, object]] | None = None
    beside: Future[ChildReply | str] | None = None
    busy: Future[list[ChildReply]] | None = None
    overtime: Overtime | None = None
    reference: ChildReply | str = ""  # the timed_once reference call, once taken
    more: list[ChildReply] = field(default_factory=list)


class _Run:
    """One grading run: its options, its grading module, its `children` and its `measurer`,
    and the reference answers computed ahead on one thread."""

    def __init__(self, plan: GradingPlan, solution: Path, seed: int, emit: Emit,
                 options: GradeOptions) -> None:
        exercise = plan.exercise
        self.exercise, self.device, self.seed, self.emit = exercise, plan.device, seed, emit
        self.replay = ""
        self.any_passed = False
        self.ctx = RunContext(device=plan.device, seed=seed, dtype=exercise.dtype,
                              model_paths={**(exercise.model_paths or {}),
                                           **(plan.models or {})} or None)
        self.children = Children(plan, solution, options, self.ctx, emit)
        self.own_models = dict(plan.models)  # --target/--draft: read in a child only
        self.memory_mb = plan.memory_mb
        try:
            self.grading = exercise.grading()
            self.reference = importlib.import_module(self.grading.REFERENCE)
            self.children.use_reference(self.grading.REFERENCE)
            self.drive: Any = importlib.import_module(self.children.boundary.drive)
        except BaseException:
            self.children.abort()
            raise
        self.run_timeout_s = options.run_timeout_s or exercise.run_timeout_s
        self.children.start_clock(self.run_timeout_s)
        self.measurer = Measurer(
            self.children, self.grading, options.timing_repeats or exercise.timing_repeats,
            plan.device == "cuda" if options.event_timing is None else options.event_timing)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reference")
        self._pending: list[Future[tuple[bool, object]]] = []
        folder = (None if self.own_models  # their answers come from the models child
                  else usable_folder(options.expected_cache, solution, plan.confine))
        self.cache = None if folder is None else ExpectedCache.open(folder, exercise, self.ctx)
        self.fixed: set[str] = set()  # the levels' fixed cases so far (`cache` keeps them)

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
        self.children.close()
        if self.cache is not None:
            self.cache.save()

    def case_ctx(self, case: Case) -> RunContext:
        """The context of `case`'s graded call: its seed from `checked_seed`, drawn from the
        range of the timed calls' seeds."""
        return dataclasses.replace(self.ctx, seed=checked_seed(self.seed, case))

    def _expected(self, case: Case) -> tuple[bool, object]:
        """The reference's answer, computed here (never in the learner's process), passed
        through the codec so `check` compares values of the same kinds. With the learner's
        own checkpoints, computed in the models child instead (`Children.expected`): a
        checkpoint is loaded only under a sandbox's limits. A fixed case's answer is read from
        (or added to) the kept answers (`cache`), except with the learner's checkpoints."""
        if self.own_models:
            out = self.children.expected(case, f"{self.exercise.module}.grading",
                                         self.case_ctx(case))
            if out.ok:
                return True, out.value
            return False, OwnModelFault(self.own_models, out, self.memory_mb)
        kept = self.cache is not None and case_key(case) in self.fixed
        if kept:
            assert self.cache is not None
            hit, value = self.cache.get(case)
            if hit:
                return True, value
        restore = cpu_threads_one(self.device, self.exercise.needs_torch)
        try:
            custom = getattr(self.grading, "expected", None)
            if callable(custom):
                value = custom(case, self.case_ctx(case))
            else:
                value = self.drive.run(self.reference, case, self.case_ctx(case))
            value = codec.roundtrip(value)
            if kept:
                assert self.cache is not None
                self.cache.put(case, value)
            return True, value
        except Exception as exc:
            return False, f"{type(exc).__name__}: {exc}"
        finally:
            restore()

    def _given(self, case: Case) -> Any:
        """The inputs of the learner's call as the grading builds them (`grading.inputs`, kept
        with the answers of fixed cases), or None: the child builds them. Never for a timed
        call (its inputs come from its own seed) nor the learner's own checkpoints (read in a
        sandbox only); a failure here leaves them to the child too."""
        build = getattr(self.grading, "inputs", None)
        if not callable(build) or case.timed or self.own_models:
            return None
        kept = self.cache is not None and case_key(case) in self.fixed
        if kept:
            assert self.cache is not None
            hit, value = self.cache.get(case, part="inputs")
            if hit:
                return value
        restore = cpu_threads_one(self.device, self.exercise.needs_torch)
        try:
            value = build(case, self.case_ctx(case))
            value = None if value is None else codec.roundtrip(value)
        except Exception:
            return None
        finally:
            restore()
        if kept:
            assert self.cache is not None
            self.cache.put(case, value, part="inputs")
        return value

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
        """The learner's call, the expected value, the judge, the timing."""
        refused = self._not_run(case)
        if refused is not None:
            return refused
        call = self._learners_call(case, gate)
        failed = self._failed_call(case, call)
        if failed is not None:
            return failed
        ok, expected = self._expected_value(case, call)
        if isinstance(expected, OwnModelFault):
            return CaseResult(case, False, kind="own_model", message=str(expected))
        if not ok:
            return CaseResult(case, False, kind="grader_error",
                              message=f"the reference failed on this case ({expected}) — "
                                      "a grader bug, please report it")
        result = self._judge(case, call.out, expected)
        return self._timing(case, call, result, gate)

    def _not_run(self, case: Case) -> CaseResult | None:
        """Why the case is not run at all: the run's budget is spent, or the learner's child
        was lost too often."""
        if time.monotonic() >= self.children.deadline:
            return CaseResult(case, False, kind="run_timeout",
                              message=f"the run's {self.run_timeout_s:g} s budget ran out "
                                      "before this case")
        losses = self.children.losses
        if len(losses) >= MAX_CHILD_LOSSES:
            kinds = ", ".join(sorted(set(losses)))
            return CaseResult(case, False, kind="skipped",
                              message=f"not run: your code was already stopped "
                                      f"{len(losses)} times in this run ({kinds}) — "
                                      "fix that first")
        return None

    def _learners_call(self, case: Case, gate: dict[str, float]) -> _Call:
        """The learner's call. First, so a stub or a crash is reported without paying for the
        reference's answer (computed lazily, only for a case about to be judged). Once some
        case has passed, the learner is past the stub, and the answer is computed here on
        another thread while their child runs (a second core; the child is a separate
        process). A `timed_once` case's answer comes from the reference's child, whose call of
        the case is also the measurement: it runs beside the learner's (their second core)."""
        once, children = case.timed_once, self.children
        if once and self.any_passed:
            self._settle()  # nothing of the grader's may run beside a measurement
        # before the answer ahead: both may load the same models, which is not thread-safe
        given = self._given(case)
        ahead = self._ahead(case) if self.any_passed and not once else None
        # a timed_once call's inputs come from a seed drawn now (same for both sides): a
        # solution cannot work out the timed stream while earlier cases run
        ctx = dataclasses.replace(self.ctx, seed=timed_seeds(1)[0]) if once \
            else self.case_ctx(case)
        if given is not None:
            ctx = dataclasses.replace(ctx, given=given)
        beside = (self._pool.submit(children.reference_call, case, ctx)
                  if once and self.any_passed else None)
        learner_done = threading.Event()
        busy = (self._pool.submit(children.reference_busy, case, ctx, learner_done)
                if beside is not None else None)
        overtime = Overtime.watch(children.sandbox, beside, gate)
        out = children.learner(case, overtime.stopped if overtime is not None else None, ctx)
        learner_done.set()
        first = beside.result() if beside is not None and beside.done() else None
        if (busy is not None and not busy.done() and isinstance(first, ChildReply)
                and out.elapsed_s < 2 * first.elapsed_s):
            # far under any gate: the reference's extra run in flight is not waited for
            children.kill_reference_call()
        return _Call(out, ctx, ahead, beside, busy, overtime)

    def _failed_call(self, case: Case, call: _Call) -> CaseResult | None:
        """A learner's call that needs no reference answer to explain: stopped as too slow,
        or it never answered (reference calls beside it are then abandoned)."""
        out = call.out
        if call.overtime is not None and call.overtime.fired and not out.ok:
            self.children.abandon(call.beside, call.busy)
            return CaseResult(case, False, kind="gate", output=out.output,
                              message=call.overtime.message(),
                              metrics=call.overtime.metrics())
        if not out.ok and out.kind in NO_EXPECTED_KINDS:
            self.children.abandon(call.beside, call.busy)
            message = out.message
            if out.kind == "memory" and self.own_models:
                message += f" — {memory_note(self.own_models, self.memory_mb)}"
            return CaseResult(case, False, kind=out.kind or "exception", message=message,
                              traceback=out.traceback, output=out.output)
        return None

    def _expected_value(self, case: Case, call: _Call) -> tuple[bool, object]:
        """The reference's answer: computed ahead or now here, or (`timed_once`) the value of
        the reference child's call beside the learner's."""
        if not case.timed_once:
            return call.ahead.result() if call.ahead is not None else self._expected(case)
        call.reference = (call.beside.result() if call.beside is not None
                          else self.children.reference_call(case, call.ctx))
        with contextlib.suppress(Exception):
            call.more = call.busy.result() if call.busy is not None else []
        return _answer(call.reference)

    def _judge(self, case: Case, out: ChildReply, expected: object) -> CaseResult:
        """The grading's `check` of the learner's answer against the expected value."""
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
        return CaseResult(case, verdict.passed, kind="" if verdict.passed else "wrong",
                          message=limits.cut(verdict.message), output=out.output,
                          expected=_shown(expected),
                          got=events.short_repr(out.value), metrics=dict(verdict.metrics))

    def _timing(self, case: Case, call: _Call, result: CaseResult,
                gate: dict[str, float]) -> CaseResult:
        """A passed timed case measured (`Measurer`), then the level's gate checked."""
        if result.passed and case.timed:
            timing: dict[str, float] | CaseResult
            if isinstance(call.reference, ChildReply):
                timing = self.measurer.time_once(call.out, call.reference, call.more)
            else:
                self._settle()  # nothing of the grader's may run beside a measurement
                timing = self.measurer.time(case, call.out.elapsed_s, gate)
            if isinstance(timing, CaseResult):
                return timing
            result.metrics.update(timing)
            self.emit(events.Metrics(level=case.level, case=case.id, metrics=result.metrics))
        if result.passed and gate:
            missed = check_gate(gate, result.metrics)
            if missed:
                result.passed, result.kind = False, "gate"
                result.message = f"correct, but too slow for this level: {missed}" + (
                    " (in calibration, too far past the gate to be worth repeating)"
                    if result.metrics.get("calibration_only") else "") + (
                    f" (this case is sized so that {case.slow_class} misses the gate)"
                    if case.slow_class else "")
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
        if self.cache is not None:  # the cases another seed draws too: kept between gradings
            self.fixed |= fixed_cases(cases, self.grading.cases(number, self.seed + 1))
        # What is alive now (imports: torch's ~2·10^5 objects) is kept out of the garbage
        # collector until grade() returns: a full collection walks them all (~0.15 s), and
        # decoding and checking a law case's 10^5 values sets off several. grade() unfreezes
        # them, so a long-lived process (the TUI's grader) still collects their garbage later.
        gc.freeze()
        results: list[CaseResult] = []
        for i, c in enumerate(cases):
            if self.children.sandbox.cancelled():
                raise Cancelled()
            result = self.case(c, level.gate_for(c.id), index=i + 1, total=len(cases))
            results.append(result)
            timed = [later for later in cases[i + 1:] if later.timed
                     and later.id not in self.children.warmed]
            if result.passed and timed:
                self.children.prestart_reference(timed)
            if result.kind in STOP_LEVEL_KINDS or self.children.load_failure is not None:
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



def own_models_text(models: dict[str, str]) -> str:
    return " and ".join(f"--{role} {path}" for role, path in sorted(models.items()))


def memory_note(models: dict[str, str], cap_mb: int) -> str:
    """What a memory stop means when the learner's own checkpoints are loaded."""
    return (f"this grading loads your own checkpoint ({own_models_text(models)}) under the "
            f"sandbox's cap of {cap_mb} MiB: the lab's own allowance plus 3x the bytes its "
            "weight files occupy on disk. A config or weight files declaring a larger model "
            "than that (sparse files count only their allocated bytes) cannot be graded here")


class OwnModelFault(str):
    """Why the expected value of a case could not be computed with the learner's own
    checkpoints (the models child failed or was stopped): their folder, not the grader,
    with what stopped it."""

    def __new__(cls, models: dict[str, str], out: ChildReply, cap_mb: int) -> OwnModelFault:
        head = (f"the expected values of this case come from your own checkpoint "
                f"({own_models_text(models)}), computed in a sandboxed child of the grader")
        if out.kind == "memory":  # (the child's own words address a learner's code)
            return super().__new__(cls, f"{head}, which ran out of memory: "
                                        f"{memory_note(models, cap_mb)}")
        return super().__new__(cls, f"{head}, which failed ({out.kind or 'exception'}: "
                                    f"{out.message})")


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
    run = _Run(plan, solution, seed, write_event, options)
    run.replay = replay_command(exercise.id, chosen, seed, all_levels, models)
    if options.cancel is not None:
        run.children.sandbox.cancelled = options.cancel
    write_event(events.RunStarted(
        exercise=exercise.id, title=exercise.title, solution=str(solution),
        device=resolved, device_note=note, seed=seed, replay=run.replay,
        levels=[{"number": n, "title": exercise.level(n).title, "gate": exercise.level(n).gate,
                 "case_gates": exercise.level(n).case_gates} for n in chosen],
    ))
    try:
        level_results = [run.level(n) for n in chosen]
    finally:
        run.close()
        gc.unfreeze()
    result = GradeResult(exercise.id, resolved, seed, solution, level_results,
                         time.monotonic() - started, sandboxes_started=run.children.sandbox.spawned,
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
                            (options or GradeOptions()).load_timeout_s, plan.confine,
                            tuple(sorted(plan.models.values())))
    guess = reference_guess(plan.exercise)
    key = child_key(plan.exercise, solution, plan.device, guess, shape)
    if current is not None:
        if current.key == key and current.usable:
            return current
        current.close()
    found, sandbox = learner_sandbox(plan.exercise, solution, guess, shape)
    return Prepared(key, found, sandbox, plan.exercise, plan.device, levels=plan.levels,
                    options=shape)
