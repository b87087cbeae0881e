"""How fast does grading answer? Per exercise and level, as a learner sees it from the CLI
(`dojo lab grade ID --level N --json`, a fresh process, like pressing g in the TUI):

- stub: the untouched stub, from the command's start to its first failing case and to its
  verdict;
- pass: the reference as the solution, from the start to the verdict;

side by side with `python -c "import torch"` measured in the same run (the floor for any level
that needs torch). Grading-speed targets, printed as ratios, never asserted: first failure <= 2 s,
a passing level 1-3 <= 5 s, level 4 <= 15 s. For every torch lab: a cold passing
level 1 within torch's import + 4 s (`excess` = verdict - torch import, its ratio to 4 s). A
cold CLI grading of a passing level runs twice: the first builds the data folder's kept
answers of fixed cases (`lab.grader.expected_cache`; a new version or model does the same),
the second reads them, as every later grading does. Beside each: when the command exited, and
the grader's CPU seconds (what the command's process and the processes it reaped used; a
sandbox's inner process, killed with its PID namespace, is not reaped by it and not counted),
which a loaded machine stretches less than the wall clock.

    python bench/lab_grading.py                 # quick: every stub, and passing level 1
    python bench/lab_grading.py --full          # every level passing too (minutes on a CPU)
    python bench/lab_grading.py --exercise spec-verify --level 2
    python bench/lab_grading.py --level 1 --exercise spec-verify --exercise sampling
    python bench/lab_grading.py --served        # from pressing g on a lab the TUI prepared
    python bench/lab_grading.py --served --think 8   # g pressed 8 s after it was prepared
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import os
import resource
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
TARGET_TORCH_EXCESS_S = 4.0  # a cold passing level 1 of a torch lab, over torch's import


@dataclasses.dataclass
class Timed:
    """One grading as the learner sees it: seconds from the start to the first case_failed,
    to the summary, and to the command's exit (None where it never came), its verdict, and
    the grader's CPU seconds (nan when not measured: --served)."""

    first_failure: float | None
    summary: float | None
    verdict: str
    exited: float | None = None
    cpu_s: float = math.nan


def _children_cpu() -> float:
    """CPU seconds of this process's waited-for children and their descendants."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def target_pass_s(level: int) -> float:
    return 15.0 if level >= 4 else 5.0


def timed_grade(exercise: str, level: int, solution: Path, home: str,
                timeout_s: float) -> Timed:
    """One cold CLI run, to its exit (a grading that never sends its summary is killed)."""
    cmd = [sys.executable, "-m", "trainer", "lab", "grade", exercise, "--level", str(level),
           "--file", str(solution), "--json", "--device", "cpu", "--seed", "1"]
    env = {**os.environ, "DOJO_HOME": home, "PYTHONUNBUFFERED": "1"}
    cpu = _children_cpu()
    start = time.perf_counter()
    with subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdout is not None
        try:
            first, summary, verdict = read_grading(proc.stdout, start, timeout_s)
            exited = None
            if summary is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.stdout.read()
                    proc.wait(timeout=max(1.0, timeout_s - summary))
                    exited = time.perf_counter() - start
        finally:
            proc.kill()
    return Timed(first, summary, verdict, exited, _children_cpu() - cpu)


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
                 timeout_s: float, think_s: float = 0.0) -> Timed:
    """The first figures of `timed_grade`, for a grading through `dojo lab serve` (what
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
            return Timed(*read_grading(proc.stdout, start, timeout_s))
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
    parser.add_argument("--exercise", action="append",
                        help="Only this exercise id (repeat for several).")
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
    print(f"python -c 'import torch': {torch_s:.2f} s (this run, this machine); load "
          f"{os.getloadavg()[0]:.1f} at the start\n")
    header = (f"{'exercise':<17}{'lvl':>3} {'stub→1st fail':>13} {'ratio':>5} "
              f"{'stub done':>9} {'pass 1st':>8} {'pass':>6} {'exit':>6} {'cpu':>6} "
              f"{'ratio':>5} {'−torch':>6} {'/4 s':>5}  note")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as home:
        for ex in discover():
            if args.exercise and ex.id not in args.exercise:
                continue
            reference = reference_as_solution(ex, Path(home) / "ref" / ex.id)
            for level in ex.level_numbers:
                if args.level is not None and level != args.level:
                    continue
                stub = run(ex.id, level, ex.stub_path, home, args.timeout)
                passing = args.full or level == 1 or args.level is not None
                first = again = None
                if passing:
                    first = run(ex.id, level, reference, home, args.timeout)
                    # the answers of fixed cases are kept now: what every later grading sees
                    again = run(ex.id, level, reference, home, args.timeout)
                # a served grading imports nothing: the torch + 4 s target is for a cold one
                cold_torch = ex.needs_torch and not args.served
                print(row(ex.id, level, torch_s, cold_torch, stub, first, again),
                      flush=True)
    since = ("the grade request to a prepared `dojo lab serve` (pressing g in the TUI)"
             if args.served else "the command's start")
    print(f"\nseconds from {since}; ratio = measured / target (2 s to the first failure; 5 s "
          "to a passing verdict for levels 1-3, 15 s for level 4); under 1 meets it. 'pass "
          "1st': a passing grading that builds the kept answers of fixed cases; 'pass', 'exit' "
          "and 'cpu': the next one (its verdict, the command's exit, the grader's CPU "
          "seconds); '−torch': pass − torch's import, '/4 s' its ratio to the 4 s target "
          "(torch labs)")


def row(exercise: str, level: int, torch_s: float, cold_torch: bool, stub: Timed,
        first: Timed | None, again: Timed | None) -> str:
    notes = [] if stub.verdict == "fail" else [f"stub: {stub.verdict}"]
    for name, got in (("1st pass", first), ("pass", again)):
        if got is not None and got.verdict != "pass":
            notes.append(f"reference ({name}): {got.verdict}")
    ratio_fail = "" if stub.first_failure is None else \
        f"{stub.first_failure / TARGET_FIRST_FAILURE_S:.2f}"
    done = None if again is None else again.summary
    ratio_pass = "" if done is None else f"{done / target_pass_s(level):.2f}"
    excess = None if done is None or not cold_torch else done - torch_s
    vs_target = "" if excess is None else f"{excess / TARGET_TORCH_EXCESS_S:.2f}"
    cpu = "" if again is None or math.isnan(again.cpu_s) else f"{again.cpu_s:.1f}"
    return (f"{exercise:<17}{level:>3} {fmt(stub.first_failure):>13} {ratio_fail:>5} "
            f"{fmt(stub.summary):>9} {fmt(None if first is None else first.summary):>8} "
            f"{fmt(done):>6} {fmt(None if again is None else again.exited):>6} {cpu:>6} "
            f"{ratio_pass:>5} {fmt(excess):>6} {vs_target:>5}  {'; '.join(notes)}")


if __name__ == "__main__":
    main()
