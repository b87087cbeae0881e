"""Grade every exercise's reference on CUDA and print one summary table.

Run by `scripts/gpu_check.sh` on a machine with a GPU: each level of each exercise is graded
with the reference as the solution (`lab.grader.testing.reference_as_solution`) on
`--device cuda`, in float32 and, for exercises that run a model, in bfloat16 too. Nothing is
recorded in the learner's database. Timed cases are timed on the device's clock
(`lab.grader.gpu_timing`: CUDA events, L2 flush, the stop rule), the reference against itself, so
their ratio of medians must come out near 1 (between 1/RATIO_SPREAD and RATIO_SPREAD): the check
of the CUDA timing itself. Exit status 1 if any reference fails on the GPU (the CUDA path of the
grader or the reference is then broken), a self-timing ratio is off, or CUDA is not available.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RATIO_SPREAD = 1.5  # the reference timed against itself: its ratio of medians within 1/1.5..1.5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--exercise", action="append", help="only these exercises (repeatable)")
    parser.add_argument("--skip", action="append", default=[],
                        help="not these exercises (repeatable)")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args(argv)

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_check: CUDA is not available on this machine", file=sys.stderr)
        return 1
    if args.device.startswith("cuda"):
        print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
              f"CUDA {torch.version.cuda}")

    from lab.exercises import discover

    rows: list[Row] = []
    for ex in discover():
        if (args.exercise and ex.id not in args.exercise) or ex.id in args.skip:
            continue
        rows += _grade_exercise(ex, args.device, args.seed)
    failed = sum(row[3] != "pass" for row in rows)
    print(f"\n{'exercise':<14} {'level':>5} {'dtype':<9} {'verdict':<7} {'cases':>7} "
          f"{'self-timing (ratio, sem %)':<27} {'wall s':>7}")
    for ex_id, level, dtype, verdict, cases, timing, wall in rows:
        print(f"{ex_id:<14} {level:>5} {dtype:<9} {verdict:<7} {cases:>7} {timing:<27} "
              f"{wall:>7.1f}")
    print(f"\n{len(rows)} gradings, {failed} failed")
    return 1 if failed else 0


# One grading's table row: exercise, level, dtype, verdict, cases passed, self-timing, wall s.
Row = tuple[str, int, str, str, str, str, float]


def _grade_exercise(ex: Any, device: str, seed: int) -> list[Row]:
    """Every level of `ex` graded with its reference, in float32 and (a model's exercise but
    tensor-parallel, fp32 by contract) bfloat16; a failing level's smallest failure printed."""
    from lab.grader.runner import GradeOptions, grade
    from lab.grader.testing import reference_as_solution

    dtypes = ["float32", "bfloat16"] if ex.needs_torch and ex.model_paths else ["float32"]
    if ex.id == "tensor-parallel":  # fp32 by contract (outputs within fp32 tolerance)
        dtypes = ["float32"]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        solution = reference_as_solution(ex, Path(tmp))
        for dtype in dtypes:
            variant = dataclasses.replace(ex, dtype=dtype)
            for level in ex.level_numbers:
                start = time.perf_counter()
                result = grade(variant, solution, GradeOptions(
                    levels=[level], device=device, seed=seed))
                wall = time.perf_counter() - start
                lvl = result.levels[0]
                done = sum(r.passed for r in lvl.results)
                timing, off = self_timing(lvl)
                verdict = "pass" if lvl.passed and not off else (
                    "FAIL" if not lvl.passed else "TIMING")
                rows.append((ex.id, level, dtype, verdict, f"{done}/{len(lvl.results)}",
                             timing, wall))
                worst = None if lvl.passed else lvl.smallest_failure()
                if worst is not None:
                    print(f"  {ex.id} L{level} {dtype}: {worst.case.id} [{worst.kind}] "
                          f"{worst.message[:300]}")
    return rows


def self_timing(level: object) -> tuple[str, bool]:
    """The timed cases' ratios (the reference against itself) and whether one is off."""
    cells, off = [], False
    for r in getattr(level, "results", []):
        ratio = r.metrics.get("median_ratio")
        if not r.case.timed or ratio is None:
            continue
        sem = max(r.metrics.get("learner_sem_pct", 0.0), r.metrics.get("reference_sem_pct", 0.0))
        bad = not 1 / RATIO_SPREAD <= ratio <= RATIO_SPREAD
        off |= bad
        cells.append(f"{ratio:.2f}{'!' if bad else ''} ({sem:.1f}%)")
    return ", ".join(cells) or "-", off


if __name__ == "__main__":
    sys.exit(main())
