"""Does the speed gate flake under load? Grade a vectorised solution and a Python loop over the
vocabulary N times each while CPU burners run, and count wrong verdicts.

    python bench/judge_timing.py [-n 10] [--burners 2]

The fixture (tests/lab/fixtures/vocab_demo) gates at 15x the reference's median; the loop is
~40x, the vectorised solution ~1x. A wrong verdict is the loop passing or the vectorised solution
failing. The issue's bar is 0 wrong in 50 of each; the figure printed is what this run measured.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.exercises import load_exercise  # noqa: E402
from lab.grader.runner import grade  # noqa: E402

FIXTURE = ROOT / "tests" / "lab" / "fixtures" / "vocab_demo"
SOLUTIONS = ROOT / "tests" / "lab" / "solutions" / "vocab"


def _burn(stop: multiprocessing.synchronize.Event) -> None:
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x += i * i


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10, help="gradings per solution")
    parser.add_argument("--burners", type=int, default=2, help="CPU-burning processes")
    args = parser.parse_args()
    exercise = load_exercise(FIXTURE, module="tests.lab.fixtures.vocab_demo")
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True)
               for _ in range(args.burners)]
    for b in burners:
        b.start()
    wrong = {"vectorised": 0, "loop": 0}
    ratios: dict[str, list[float]] = {"vectorised": [], "loop": []}
    start = time.monotonic()
    try:
        for i in range(args.n):
            for name in ("vectorised", "loop"):
                result = grade(exercise, SOLUTIONS / f"{name}.py", device="cpu", seed=i,
                               store=False)
                case = result.levels[0].results[0]
                ratio = case.metrics.get("median_ratio", float("nan"))
                ratios[name].append(ratio)
                should_pass = name == "vectorised"
                if result.passed != should_pass:
                    wrong[name] += 1
                print(f"  {i:3d} {name:<10} ratio {ratio:6.2f}  "
                      f"{'PASS' if result.passed else 'FAIL'} ({case.kind or 'ok'})", flush=True)
    finally:
        stop.set()
        for b in burners:
            b.join(timeout=5)
    print(f"\n{args.n} gradings each, {args.burners} CPU burners, "
          f"{time.monotonic() - start:.0f} s, gate median_ratio <= 15")
    for name in ("vectorised", "loop"):
        r = ratios[name]
        print(f"  {name:<10} wrong verdicts {wrong[name]}/{args.n}   median ratio "
              f"{statistics.median(r):.2f} (min {min(r):.2f}, max {max(r):.2f})")
    return 0 if not any(wrong.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
