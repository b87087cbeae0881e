"""Helpers for exercise tests: prove the grader has teeth.

    from lab.grader.testing import assert_fails, assert_passes, reference_as_solution

    def test_reference_passes(tmp_path):
        assert_passes("spec-verify", reference_as_solution("spec-verify", tmp_path))

    def test_off_by_one_is_caught():
        assert_fails("spec-verify", BROKEN / "off_by_one.py", level=2,
                     match=r"expected .* got", kind="wrong")

Everything runs through the real sandbox (a subprocess per run). The judge records nothing
(recording is the lab service's, `trainer.core.lab`), so tests do not need the scheduler's
database.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.exercises import Exercise, get
from lab.grader.runner import GradeOptions, GradeResult, grade

DEFAULT_SEED = 1234


@dataclass
class GradeRun:
    result: GradeResult
    events: list[dict[str, Any]]  # the events in their JSON form (what `--json` prints)

    @property
    def failures(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == "case_failed"]

    def describe(self, limit: int = 6) -> str:
        """A readable digest for assertion messages."""
        lines = [f"passed={self.result.passed} levels="
                 f"{ {lvl.level: lvl.passed for lvl in self.result.levels} }"]
        for f in self.failures[:limit]:
            lines.append(f"  L{f['level']} {f['case']} [{f['kind']}] {f['message'][:300]}")
        if len(self.failures) > limit:
            lines.append(f"  … {len(self.failures) - limit} more failures")
        return "\n".join(lines)


def _exercise(exercise: str | Exercise) -> Exercise:
    return exercise if isinstance(exercise, Exercise) else get(exercise)


@dataclass(frozen=True)
class _OnlyCases(Exercise):
    """An exercise whose levels keep only the named cases (benches and tests of one case)."""

    only: frozenset[str] = frozenset()

    def grading(self) -> Any:
        module = super().grading()
        proxy = types.SimpleNamespace(**vars(module))
        proxy.cases = lambda level, seed: [c for c in module.cases(level, seed)
                                           if c.id in self.only]
        return proxy


def only_cases(exercise: str | Exercise, *case_ids: str) -> Exercise:
    """`exercise` with only these cases in its levels: a timed case graded without the law
    cases around it, when those are not what a test or bench is about."""
    ex = _exercise(exercise)
    fields = {f.name: getattr(ex, f.name) for f in dataclasses.fields(ex)}
    return _OnlyCases(**fields, only=frozenset(case_ids))


def reference_as_solution(exercise: str | Exercise, directory: Path) -> Path:
    """Copy the reference into `directory` under the workspace file name.

    (Graded in place it would be refused: the sandbox blocks anything loaded from lab/reference.)
    """
    ex = _exercise(exercise)
    module = ex.grading().REFERENCE
    source = Path(__file__).resolve().parents[2].joinpath(*module.split(".")).with_suffix(".py")
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / ex.workspace_file
    shutil.copyfile(source, target)
    return target


def grade_file(
    exercise: str | Exercise, solution: Path, level: int | list[int] | None = None,
    seed: int = DEFAULT_SEED, **kwargs: Any,
) -> GradeRun:
    """Grade and collect the event stream (kwargs are `lab.grader.plan.GradeOptions` fields);
    `level`: one level, several (graded in one run, one child), or None for all."""
    kwargs.setdefault("device", "cpu")
    levels = [level] if isinstance(level, int) else level
    options = GradeOptions(levels=levels or None, seed=seed, **kwargs)
    result = grade(_exercise(exercise), Path(solution), options)
    return GradeRun(result, [e.to_dict() for e in result.events])


def assert_passes(
    exercise: str | Exercise, solution: Path, level: int | list[int] | None = None,
    seed: int = DEFAULT_SEED, **kwargs: Any,
) -> GradeRun:
    run = grade_file(exercise, solution, level, seed, **kwargs)
    if not run.result.passed:
        raise AssertionError(f"{solution} should pass level {level or 'all'}:\n{run.describe()}")
    return run


def assert_fails(
    exercise: str | Exercise, solution: Path, level: int, match: str,
    kind: str | None = None, seed: int = DEFAULT_SEED, *, intact: tuple[int, ...] = (),
    **kwargs: Any,
) -> GradeRun:
    """Level `level` must fail, and some failed required case's message must match the regex
    `match` (and have failure kind `kind` when given). `intact`: other levels graded in the
    same run (one child, not one per level) that must pass."""
    run = grade_file(exercise, solution, sorted({level, *intact}), seed, **kwargs)
    verdicts = {lvl.level: lvl.passed for lvl in run.result.levels}
    broken = [lvl for lvl in intact if not verdicts.get(lvl)]
    if broken:
        raise AssertionError(f"{solution} should pass level {broken[0]}:\n{run.describe()}")
    if verdicts.get(level, True):
        raise AssertionError(f"{solution} should fail level {level} but passed")
    pattern = re.compile(match)
    hits = [
        f for f in run.failures
        if f["required"] and f["level"] == level and pattern.search(f["message"])
        and (kind is None or f["kind"] == kind)
    ]
    if not hits:
        raise AssertionError(
            f"{solution} failed level {level}, but no failure matches {match!r}"
            + (f" with kind {kind!r}" if kind else "") + f":\n{run.describe()}"
        )
    return run


def confined() -> bool:
    """Whether sandbox children get every namespace protection on this machine."""
    from lab.grader.confine import missing_here

    return not missing_here()
