"""Behaviour check for grader refactors: grade every exercise's reference, stub and test
solutions (tests/<exercise>/solutions, tests/lab/solutions for kv-bytes) at every level with a
fixed seed, and write the event streams with timing figures dropped; `--diff A B` compares two
such files, masking what varies between identical runs (figures in messages, the RSS at a
memory kill, rank pids).

    PYTHONPATH=<old tree> python scripts/event_streams.py --out before.jsonl
    PYTHONPATH=<new tree> python scripts/event_streams.py --out after.jsonl
    python scripts/event_streams.py --diff before.jsonl after.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DROP = {"duration_s", "metrics", "case_metrics", "stopped_after_ms"}
TMP = re.compile(r"/tmp/[^\s'\"]*")
VARIES = re.compile(r"\d+\.\d+|\d+(?= MiB)|pids \[[0-9, ]*\]")


def _solutions(ex: Any, scratch: Path) -> Iterator[tuple[str, Path]]:
    """Each graded file: the reference (copied out of lab/reference into `scratch`), the stub,
    the tests'."""
    from lab.grader.testing import reference_as_solution

    yield "reference", reference_as_solution(ex, scratch / ex.path.name / "ref")
    yield "stub", ex.stub_path
    folder = ROOT / "tests" / ex.path.name / "solutions"
    for f in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        yield f"tests:{f.name}", f
    if ex.id == "kv-bytes":
        for f in sorted((ROOT / "tests/lab/solutions").glob("*.py")):
            yield f"lab:{f.name}", f


def capture(out: Path, only: list[str], seed: int) -> None:
    import lab
    from lab.exercises import discover
    from lab.grader.testing import grade_file

    tree = str(Path(lab.__file__).resolve().parents[1])  # the tree graded (PYTHONPATH's)
    with out.open("w") as fh, tempfile.TemporaryDirectory() as scratch:
        for ex in discover():
            if only and ex.id not in only:
                continue
            for name, path in _solutions(ex, Path(scratch)):
                for level in ex.level_numbers:
                    start = time.monotonic()
                    try:
                        run = grade_file(ex.id, path, level, seed=seed, device="cpu")
                        evs = [{k: v for k, v in e.items() if k not in DROP
                                and not (e["event"] == "run_started" and k == "solution")}
                               for e in run.events]
                    except Exception as exc:
                        evs = [{"error": f"{type(exc).__name__}: {exc}"}]
                    line = json.dumps({"exercise": ex.id, "solution": name, "level": level,
                                       "events": evs}, sort_keys=True)
                    fh.write(line.replace(tree, "<tree>") + "\n")  # tracebacks' paths
                    fh.flush()
                    print(ex.id, name, level, f"{time.monotonic() - start:.1f}s", flush=True)


def _load(path: Path) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    runs = (json.loads(line) for line in path.read_text().splitlines())
    return {(r["exercise"], r["solution"], r["level"]): r["events"] for r in runs}


def _clean(events: list[dict[str, Any]], mask: bool) -> str:
    text = TMP.sub("<tmp>", json.dumps(events, sort_keys=True))
    return VARIES.sub("<n>", text) if mask else text


def diff(before: Path, after: Path) -> int:
    b, a = _load(before), _load(after)
    keys = [k for k in b if k in a]
    exact = sum(_clean(b[k], False) == _clean(a[k], False) for k in keys)
    differ = [k for k in keys if _clean(b[k], True) != _clean(a[k], True)]
    print(f"runs: {len(keys)} compared (before {len(b)}, after {len(a)}), "
          f"{sum(len(b[k]) for k in keys)} events; identical: {exact}; "
          f"identical once varying figures are masked: {len(keys) - len(differ)}")
    for k in differ:
        print("DIFF", *k)
    return 1 if differ or len(keys) != len(b) or len(keys) != len(a) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="capture into this file")
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("exercise", nargs="*", help="only these exercises")
    args = parser.parse_args()
    if args.diff:
        return diff(*args.diff)
    if args.out is None:
        parser.error("give --out FILE or --diff BEFORE AFTER")
    capture(args.out, args.exercise, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
