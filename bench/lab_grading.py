"""How fast does grading answer? Per exercise and level, as a learner sees it from the CLI
(`dojo lab grade ID --level N --json`, a fresh process, like pressing g in the TUI):

- stub: the untouched stub, from the command's start to its first failing case and to its
  verdict;
- pass: the reference as the solution, from the start to the verdict;

side by side with `python -c "import torch"` measured in the same run (the floor for any level
that needs torch). Targets from #18, printed as ratios, never asserted: first failure <= 2 s,
a passing level 1-3 <= 5 s, level 4 <= 15 s.

    python bench/lab_grading.py                 # quick: every stub, and passing level 1
    python bench/lab_grading.py --full          # every level passing too (minutes on a CPU)
    python bench/lab_grading.py --exercise spec-verify --level 2
    python bench/lab_grading.py --served        # from pressing g on a lab the TUI prepared
    python bench/lab_grading.py --served --think 8   # g pressed 8 s after it was prepared
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab.exercises import discover  # noqa: E402
from lab.grader.testing import reference_as_solution  # noqa: E402

TARGET_FIRST_FAILURE_S = 2.0


def target_pass_s(level: int) -> float:
    return 15.0 if level >= 4 else 5.0


def timed_grade(exercise: str, level: int, solution: Path, home: str,
                timeout_s: float) -> tuple[float | None, float | None, str]:
    """(seconds to the first case_failed, seconds to the summary, verdict) of one CLI run."""
    cmd = [sys.executable, "-m", "trainer", "lab", "grade", exercise, "--level", str(level),
           "--file", str(solution), "--json", "--device", "cpu", "--seed", "1"]
    env = {**os.environ, "DOJO_HOME": home, "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    with subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdout is not None
        try:
            return read_grading(proc.stdout, start, timeout_s)
        finally:
            proc.kill()


def read_grading(lines: IO[str], start: float, timeout_s: float
                 ) -> tuple[float | None, float | None, str]:
    """Read `--json` events up to the summary: (seconds from `start` to the first case_failed,
    to the summary, verdict)."""
    first_failure: float | None = None
    for line in lines:
        if time.perf_counter() - start > timeout_s:
            return first_failure, None, "timed out"
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event.get("event") == "case_failed" and first_failure is None:
            first_failure = time.perf_counter() - start
        if event.get("event") == "summary":
            return (first_failure, time.perf_counter() - start,
                    "pass" if event["passed"] else "fail")
    return first_failure, None, "no summary"


def served_grade(exercise: str, level: int, solution: Path, home: str,
                 timeout_s: float, think_s: float = 0.0) -> tuple[float | None, float | None, str]:
    """The same three figures as `timed_grade`, for a grading through `dojo lab serve` (what
    the TUI runs) after its prepare request has been answered: the time from pressing g on a
    lab that was selected for a few seconds. `solution` is copied into the workspace.
    `think_s`: seconds between that answer and the grade request (the learner reading or
    editing; meanwhile the reference's timing child, for a level with a timed case, warms)."""
    env = {**os.environ, "DOJO_HOME": home, "PYTHONUNBUFFERED": "1"}
    started = subprocess.run([sys.executable, "-m", "trainer", "lab", "start", exercise,
                              "--level", str(level)], cwd=ROOT, env=env, capture_output=True,
                             text=True, check=True)
    workspace = Path(started.stdout.strip().splitlines()[-1])
    workspace.write_text(solution.read_text())
    cmd = [sys.executable, "-m", "trainer", "lab", "serve"]
    with subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            def send(request: dict[str, object]) -> None:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()

            send({"exercise": exercise, "level": level, "prepare": True})
            for line in proc.stdout:
                if line.startswith("{") and json.loads(line).get("event") == "prepared":
                    break
            time.sleep(think_s)
            start = time.perf_counter()
            send({"exercise": exercise, "level": level})
            return read_grading(proc.stdout, start, timeout_s)
        finally:
            proc.kill()


def torch_import_s() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - start


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exercise", help="Only this exercise id.")
    parser.add_argument("--level", type=int, help="Only this level.")
    parser.add_argument("--full", action="store_true", help="Grade every level passing too.")
    parser.add_argument("--timeout", type=float, default=120.0, help="Per grading run (s).")
    parser.add_argument("--served", action="store_true",
                        help="Grade through `dojo lab serve` after its prepare request, as the "
                             "TUI does for a lab selected for a moment (default: a cold CLI).")
    parser.add_argument("--think", type=float, default=0.0,
                        help="With --served: seconds between the prepared answer and pressing "
                             "g (default 0, the worst case: g pressed the moment it is ready).")
    args = parser.parse_args()
    run = (functools.partial(served_grade, think_s=args.think) if args.served else timed_grade)

    torch_s = torch_import_s()
    print(f"python -c 'import torch': {torch_s:.2f} s (this run, this machine)\n")
    header = (f"{'exercise':<13}{'lvl':>4} {'stub→1st fail':>14} {'ratio':>6} "
              f"{'stub verdict':>13} {'pass verdict':>13} {'ratio':>6} {'× torch':>8}  note")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as home:
        for ex in discover():
            if args.exercise and ex.id != args.exercise:
                continue
            reference = reference_as_solution(ex, Path(home) / "ref" / ex.id)
            for level in ex.level_numbers:
                if args.level is not None and level != args.level:
                    continue
                first, stub_done, stub_outcome = run(ex.id, level, ex.stub_path, home,
                                                     args.timeout)
                passing = args.full or level == 1 or args.level is not None
                if passing:
                    _, pass_done, pass_outcome = run(ex.id, level, reference, home,
                                                     args.timeout)
                else:
                    pass_done, pass_outcome = None, "skipped (--full)"
                notes = [] if stub_outcome == "fail" else [f"stub: {stub_outcome}"]
                if pass_outcome != "pass":
                    notes.append(f"reference: {pass_outcome}")
                ratio_fail = "" if first is None else f"{first / TARGET_FIRST_FAILURE_S:.2f}"
                ratio_pass = "" if pass_done is None else f"{pass_done / target_pass_s(level):.2f}"
                vs_torch = "" if pass_done is None else f"{pass_done / torch_s:.1f}"
                print(f"{ex.id:<13}{level:>4} {fmt(first):>14} {ratio_fail:>6} "
                      f"{fmt(stub_done):>13} {fmt(pass_done):>13} {ratio_pass:>6} "
                      f"{vs_torch:>8}  {'; '.join(notes)}", flush=True)
    since = ("the grade request to a prepared `dojo lab serve` (pressing g in the TUI)"
             if args.served else "the command's start")
    print(f"\nseconds from {since}; ratio = measured / target (2 s to the first "
          "failure; 5 s to a passing verdict for levels 1-3, 15 s for level 4); under 1 meets it")


if __name__ == "__main__":
    main()
