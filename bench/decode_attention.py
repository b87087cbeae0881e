"""Benchmark the decode-attention reference: the interpreter's cost per case on a CPU, the
achieved bandwidth share on CUDA.

    python bench/decode_attention.py [--device cpu|cuda] [--levels 1234] [--seed 1]

cpu: every case of each level run through the drive (Triton's interpreter, as the grader's child
     runs it, in this process), one line per case: wall seconds, program instances launched (the
     interpreter's cost is per program instance), seconds per instance, and each level's total -
     the figures behind "each CPU case under about a second".
cuda: each level's speed case (levels 2-4) with the reference: milliseconds per call, torch's, the
     copy bandwidth measured in the same run, and the roofline's share of the kernel's time, as
     the grader reports them.
Run it with `nice` on a shared CPU.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _instances(case: Any) -> int:
    """Program instances the reference's launches start for `case` (grid sizes)."""
    p = case.params
    kind = p["kind"]
    if kind == "softmax":
        return int(p["rows"])
    if kind == "combine":
        return int(p["batch"]) * int(p["heads"])
    heads, batch = int(p["heads"]), len(p["lens"])
    if kind == "partials":
        return batch * heads * int(p["num_splits"])
    if kind == "flash":
        return sum(batch * heads * (int(s) + 1) for s in p["num_splits"])
    return batch * heads


def cpu(levels: list[int], seed: int) -> None:
    os.environ[_device_var()] = "cpu"
    import importlib

    from lab.exercises.decode_attention import drive, grading
    from lab.grader.api import RunContext

    reference = importlib.import_module(grading.REFERENCE)
    ctx = RunContext(device="cpu", seed=seed)
    print(f"{'case':<36} {'s':>6} {'programs':>9} {'ms/program':>11}  passed")
    for level in levels:
        total = 0.0
        for case in grading.cases(level, seed):
            if case.params["kind"] == "speed":
                continue
            start = time.perf_counter()
            got = drive.run(reference, case, ctx)
            took = time.perf_counter() - start
            total += took
            n = _instances(case)
            ok = grading.check(case, got, grading.expected(case, ctx)).passed
            print(f"L{level} {case.id:<33} {took:6.2f} {n:9d} {took / n * 1e3:11.1f}  {ok}")
        print(f"L{level} total {total:.2f} s (the interpreter alone, no sandbox start)")


def cuda(levels: list[int]) -> None:
    os.environ[_device_var()] = "cuda"
    import importlib

    from lab.exercises.decode_attention import drive, gpu_timing, grading
    from lab.exercises.decode_attention.grading import speed

    reference = importlib.import_module(grading.REFERENCE)
    for level in [n for n in levels if n > 1]:
        case = next(c for c in grading.cases(level, 0) if c.params["kind"] == "speed")
        got = gpu_timing.measure(reference, case.params)
        verdict = speed.check(case, got, speed.expected(case, "cuda"))
        print(f"L{level} {case.id}: {'ok' if verdict.passed else 'FAILED'} — {verdict.message}")
    del drive


def _device_var() -> str:
    from lab.grader.api import DEVICE_VAR

    return DEVICE_VAR


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--levels", default="1234")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    levels = [int(c) for c in args.levels]
    if args.device == "cuda":
        cuda(levels)
    else:
        cpu(levels, args.seed)


if __name__ == "__main__":
    main()
