"""How far is each speed gate from what it must pass and what it must fail? Grade, through the
real grader and sandbox, every timed case's reference, the tests' correct solutions and the
broken ones each gate exists to catch, several times, and print each ratio beside the gate.

    python bench/gates.py [--runs 3] [--exercise sampling] [--case L2-timed-history] ...

For each row: the ratios the gate bounds (wall clock, and CPU time where measured), one per run;
`margin` is gate / worst ratio for a solution that must pass and worst ratio / gate for one that
must fail (the CI's bar is 2.5 or more; under ~1.5 a loaded machine decides the verdict);
`measured` rows are classes the CPU cannot place on either side (printed, not judged). The
load average is printed per run: run it on a machine as busy as the CI's. A `timed_once` call
over its gate is stopped there (runner.Overtime): its ratio and margin are then lower bounds.
A batched call 2.5x past its gate is judged from calibration ("in calibration"): its ratio is
the calibration's, one call against one calibrated batch. Each timed case is judged by its own
gate (`[level.case_gate.<id>]`, else the level's).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

T = ROOT / "tests"
# meter's timed case after one that passes (so the reference's pass runs beside it: runner.py),
# without the 12,000-event case, where a window searched with `in` can time out first
METER = "empty-stream million-events"
# exercise, level, cases graded (None: the whole level; ids split by spaces), label, file
# ("reference"), must pass (True), must fail (False) or is only measured (None: a class the CPU
# cannot place)
ROWS: list[tuple[str, int, str | None, str, str, bool | None]] = [
    ("sampling", 2, "L2-timed-top-p", "reference",
     "reference", True),
    ("sampling", 2, "L2-timed-top-p", "dense masks (independent)",
     "sampling/solutions/independent.py", True),
    ("sampling", 2, "L2-timed-top-p", "mask tested id by id",
     "sampling/broken/batch_python_mask.py", None),
    ("sampling", 2, "L2-timed-history", "reference",
     "reference", True),
    ("sampling", 2, "L2-timed-history", "dense masks (independent)",
     "sampling/solutions/independent.py", True),
    ("sampling", 2, "L2-timed-history", "mask tested id by id",
     "sampling/broken/batch_python_mask.py", None),
    ("sampling", 2, "L2-timed-history", "loop over history ids",
     "sampling/broken/batch_history_loop.py", False),
    ("sampling", 2, "L2-timed-history", "loop over every (row, id)",
     "sampling/broken/batch_vocab_loop.py", False),
    ("spec-verify", 3, "L3-large-vocab", "reference", "reference", True),
    ("spec-verify", 3, "L3-large-vocab", "loop over the vocabulary",
     "spec_verify/broken/l3_vocab_loop.py", False),
    ("paged-kv", 4, "gather-timed", "reference", "reference", True),
    ("paged-kv", 4, "gather-timed", "per-head K/V copies (independent)",
     "paged_kv/solutions/independent.py", True),
    ("paged-kv", 4, "gather-timed", "loop over tokens", "paged_kv/broken/gather_python_loop.py",
     False),
    ("paged-kv", 4, "gather-timed", "per-token index cached by table",
     "paged_kv/broken/gather_index_cached.py", False),
    ("paged-kv", 4, "gather-timed", "loop over each sequence's blocks",
     "paged_kv/broken/gather_block_loop.py", None),
    ("meter", 4, METER, "reference", "reference", True),
    ("meter", 4, METER, "Decimal on every event", "meter/broken/_correct.py", True),
    ("meter", 4, METER, "three deep copies per event", "meter/broken/slow.py", None),
    ("meter", 4, METER, "window searched with `in`", "meter/broken/window_scan.py", False),
]


def _solution(exercise: Any, file: str, folder: Path) -> Path:
    from lab.grader.testing import reference_as_solution
    from tests import mutants

    if file == "reference":
        return reference_as_solution(exercise, folder)
    path = T / file
    if "export(mutate(" in path.read_text(encoding="utf-8"):  # a mutant of the reference
        return mutants.materialize(path, folder / exercise.workspace_file)
    return path


def _ratios(run: Any, gate: dict[str, float]) -> tuple[dict[str, float], str]:
    """The gated figures of the run's timed case, and its verdict ('pass', or the kind)."""
    for level in run.result.levels:
        for result in level.results:
            if result.case.timed and result.metrics:
                names = [k.rpartition("_")[0] for k in gate]
                figures = {n: result.metrics[n] for n in names if n in result.metrics}
                figures |= {f"cpu_{n}": result.metrics[f"cpu_{n}"] for n in names
                            if f"cpu_{n}" in result.metrics}
                if "stopped_after_ms" in result.metrics:  # killed at the gate (runner.Overtime)
                    return figures, "stopped at the gate: its ratio is at least this"
                verdict = "pass" if result.passed else result.kind
                if result.metrics.get("calibration_only"):
                    verdict += " in calibration"  # far past the gate: not repeated
                return figures, verdict
    return {}, "untimed"


def _margin(runs: list[dict[str, float]], gate: dict[str, float], must_pass: bool) -> float:
    """How far the worst run is from the gate, as a factor: for a solution that must pass, the
    least bound / ratio over every bound and run; for one that must fail, the least over runs
    of its largest ratio / bound (one bound exceeded fails it). NaN when nothing was timed."""
    def over(figures: dict[str, float]) -> list[float]:
        return [v / gate[k.removeprefix("cpu_") + "_max"] for k, v in figures.items()]

    worst = [x for f in runs for x in over(f)]
    if not worst:
        return float("nan")
    if must_pass:
        return 1 / max(worst)
    return min(max(over(f)) for f in runs if f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--exercise", action="append", help="only these exercises")
    parser.add_argument("--case", action="append", help="only these timed cases")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="gates-") as scratch:  # each row's solution copy
        return _rows(args, Path(scratch))  # (a folder per row was left in /tmp: 62 of them)


def _rows(args: argparse.Namespace, scratch: Path) -> int:
    from lab.exercises import get
    from lab.grader.testing import grade_file, only_cases

    for row, (ex_id, level, case, label, file, must_pass) in enumerate(ROWS):
        if (args.exercise and ex_id not in args.exercise) or (
                args.case and not set(args.case) & set((case or "").split())):
            continue
        exercise = get(ex_id)
        lvl = exercise.level(level)
        ids = case.split() if case else []
        bounds = next((lvl.gate_for(c) for c in ids if c in lvl.case_gates), lvl.gate)
        gate = {k: v for k, v in bounds.items() if k.endswith("_max")}
        graded = only_cases(exercise, *ids) if ids else exercise
        (scratch / str(row)).mkdir()
        path = _solution(exercise, file, scratch / str(row))
        runs: list[dict[str, float]] = []
        cells = []
        for i in range(args.runs):
            load = os.getloadavg()[0]
            figures, verdict = _ratios(grade_file(graded, path, level, seed=1234 + i), gate)
            runs.append(figures)
            cells.append(" ".join(f"{k} {v:.2f}" for k, v in figures.items())
                         + f" [{verdict}, load {load:.1f}]")
        verdict = {True: "must pass", False: "must fail", None: "measured"}[must_pass]
        margin = "-" if must_pass is None else f"{_margin(runs, gate, must_pass):.2f}"
        if all("stopped" in c for c in cells):
            margin = f"at least {margin} (stopped at the gate)"
        print(f"{ex_id} L{level} {case or 'level'} | {label} | {verdict} | gate {gate} | "
              f"margin {margin}", flush=True)
        for cell in cells:
            print(f"    {cell}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
