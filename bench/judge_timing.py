"""Does the speed gate flake under load? Grade a vectorised solution and a Python loop over the
vocabulary N times each while CPU burners run, and count wrong verdicts.

    python bench/judge_timing.py [-n 10] [--burners 2]            # the fixture (seconds each)
    python bench/judge_timing.py --real [-n 10] [--burners 0]     # spec-verify L3's timed case
    python bench/judge_timing.py --meter [-n 10] [--burners 0]    # meter L4's 10^6 events

The fixture (tests/lab/fixtures/vocab_demo) gates at 15x the reference's median; the loop is
~40x, the vectorised solution ~1x. `--real` grades only the timed case of spec-verify level 3
(V = 32,000, gate 15x) with the reference copied as the solution and the vocabulary-loop bug of
tests/spec_verify/broken. A wrong verdict is the loop passing or the vectorised solution failing.
`--meter` grades meter level 4 (a small stream, then the 10^6-event `timed_once` case, gate 12x)
with the reference copied as the solution, and a correct ledger that searches its dedup window
with `in` on every event (~160x the reference's time: stopped at the gate).
The bar is 0 wrong in 50 of each; the figure printed is what this run measured.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.exercises import Exercise, get, load_exercise  # noqa: E402
from lab.grader.runner import GradeOptions, grade  # noqa: E402
from lab.grader.testing import only_cases, reference_as_solution  # noqa: E402

FIXTURE = ROOT / "tests" / "lab" / "fixtures" / "vocab_demo"
SOLUTIONS = ROOT / "tests" / "lab" / "solutions" / "vocab"
REAL_CASE = "L3-large-vocab"


def _real() -> tuple[Exercise, dict[str, Path], list[int]]:
    ex = get("spec-verify")
    one = only_cases(ex, REAL_CASE)
    folder = Path(tempfile.mkdtemp(prefix="judge-timing-"))
    solutions = {"vectorised": reference_as_solution(ex, folder),
                 "loop": ROOT / "tests" / "spec_verify" / "broken" / "l3_vocab_loop.py"}
    return one, solutions, [3]


def _meter() -> tuple[Exercise, dict[str, Path], list[int], str, str]:
    ex = get("meter")
    one = only_cases(ex, "empty-stream", "million-events")
    folder = Path(tempfile.mkdtemp(prefix="judge-timing-"))
    good = reference_as_solution(ex, folder / "good")
    scan = ROOT / "tests" / "meter" / "broken" / "window_scan.py"
    gate = f"{ex.level(4).gate['median_ratio_max']:g}"
    return one, {"correct": good, "window-scan": scan}, [4], "million-events", gate


def _burn(stop: multiprocessing.synchronize.Event) -> None:
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x += i * i


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="gradings per solution")
    parser.add_argument("--burners", type=int, default=2, help="CPU-burning processes")
    parser.add_argument("--real", action="store_true",
                        help="spec-verify level 3's timed case instead of the fixture")
    parser.add_argument("--meter", action="store_true",
                        help="meter level 4's timed_once case instead of the fixture")
    args = parser.parse_args()
    timed_case, bound = "", "15"
    if args.meter:
        exercise, solutions, levels, timed_case, bound = _meter()
    elif args.real:
        exercise, solutions, levels = _real()
    else:
        exercise = load_exercise(FIXTURE, module="tests.lab.fixtures.vocab_demo")
        solutions = {name: SOLUTIONS / f"{name}.py" for name in ("vectorised", "loop")}
        levels = None
    good, bad = list(solutions)
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True)
               for _ in range(args.burners)]
    for b in burners:
        b.start()
    wrong = {good: 0, bad: 0}
    ratios: dict[str, list[float]] = {good: [], bad: []}
    seconds: dict[str, list[float]] = {good: [], bad: []}
    start = time.monotonic()
    try:
        for i in range(args.n):
            for name in (good, bad):
                began = time.monotonic()
                result = grade(exercise, solutions[name], GradeOptions(levels=levels, device="cpu",
                               seed=i))
                seconds[name].append(time.monotonic() - began)
                results = result.levels[0].results
                case = next((r for r in results if r.case.id == timed_case), results[-1])
                ratio = case.metrics.get("median_ratio", float("nan"))
                ratios[name].append(ratio)
                should_pass = name == good
                if result.passed != should_pass:
                    wrong[name] += 1
                cpu = case.metrics.get("cpu_median_ratio", float("nan"))
                print(f"  {i:3d} {name:<10} {seconds[name][-1]:5.1f} s  ratio {ratio:6.2f} "
                      f"(CPU time {cpu:6.2f})  "
                      f"{'PASS' if result.passed else 'FAIL'} ({case.kind or 'ok'})", flush=True)
    finally:
        stop.set()
        for b in burners:
            b.join(timeout=5)
    print(f"\n{args.n} gradings each, {args.burners} CPU burners, "
          f"{time.monotonic() - start:.0f} s, gate median_ratio <= {bound}")
    for name in (good, bad):
        r = ratios[name]
        print(f"  {name:<10} wrong verdicts {wrong[name]}/{args.n}   median ratio "
              f"{statistics.median(r):.2f} (min {min(r):.2f}, max {max(r):.2f})   grading "
              f"{statistics.median(seconds[name]):.1f} s median")
    return 0 if not any(wrong.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
