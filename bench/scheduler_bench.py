"""Scheduler speed figures, printed beside their targets (never asserted in tests).

  python bench/scheduler_bench.py [--cards 10000] [--reviews 1000000] [--runs 25]

1. cold `dojo --help` (a fresh interpreter each run; `python -c pass` shown for scale);
2. with CARDS cards and REVIEWS log rows: building today's queue and recording one answer
   (one fsync'd transaction, synchronous=FULL), median and 90th percentile over RUNS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scheduler.store import Store  # noqa: E402

TARGET_MS = 20.0


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def report(name: str, samples: list[float], target: float | None) -> None:
    median = statistics.median(samples)
    p90 = sorted(samples)[int(0.9 * (len(samples) - 1))]
    ratio = f"{median / target:5.2f}× target {target:.0f} ms" if target else ""
    print(f"{name:<44} median {median:8.1f} ms   p90 {p90:8.1f} ms   {ratio}")


def cold_help(runs: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOJO_HOME": tempfile.mkdtemp()}

    def run(*args: str) -> None:
        subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL)

    report("python -c pass (interpreter start, for scale)", timed(lambda: run("-c", "pass"),
                                                                  runs), None)
    report("cold `dojo --help`", timed(lambda: run("-m", "trainer", "--help"), runs), None)


def fill(path: Path, cards: int, reviews: int, today: dt.date) -> None:
    """Write a realistic history straight into the schema (fast bulk insert)."""
    with Store.open(path) as store:
        store.sync_cards((f"q{i:05}", f"topic{i % 12}") for i in range(cards))
    rng = random.Random(0)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous = OFF")
    reviewed = int(cards * 0.8)  # 20 % still new
    for i in range(reviewed):  # ~1.5 % due today or overdue, the rest spread ahead
        due = today + dt.timedelta(days=rng.randint(-3, 200) if rng.random() < 0.98 else 0)
        conn.execute("UPDATE cards SET ef=?, repetitions=?, interval=?, due=?, "
                     "last_reviewed_ms=? WHERE question_id=?",
                     (rng.randint(130, 300), rng.randint(1, 8), rng.randint(1, 200),
                      due.isoformat(), 0, f"q{i:05}"))
    start_ms = int(dt.datetime(today.year, today.month, today.day, tzinfo=dt.UTC).timestamp()
                   * 1000) - 730 * 86_400_000
    batch = []
    for n in range(reviews):
        ms = start_ms + n * (730 * 86_400_000 // reviews)
        day = dt.datetime.fromtimestamp(ms / 1000, dt.UTC).date().isoformat()
        ef = rng.randint(130, 300)
        batch.append((uuid.uuid4().hex, f"q{rng.randrange(reviewed):05}", ms, day,
                      "review" if n % 4 else "redrill", rng.randint(0, 5), 1, "answer text",
                      rng.randint(500, 60_000), None, ef, 2, 6, day, 0, 0, None,
                      ef, 3, 15, day, 0, 0))
        if len(batch) == 50_000:
            conn.executemany("INSERT INTO reviews (uid, question_id, reviewed_ms, study_day, "
                             "mode, quality, correct, answer_text, response_ms, params, "
                             "ef_before, reps_before, interval_before, due_before, "
                             "lapses_before, leech_before, last_reviewed_ms_before, ef_after, "
                             "reps_after, interval_after, due_after, lapses_after, "
                             "leech_after) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                             "?)", batch)
            batch.clear()
    if batch:
        conn.executemany("INSERT INTO reviews (uid, question_id, reviewed_ms, study_day, mode, "
                         "quality, correct, answer_text, response_ms, params, ef_before, "
                         "reps_before, interval_before, due_before, lapses_before, "
                         "leech_before, last_reviewed_ms_before, ef_after, reps_after, "
                         "interval_after, due_after, lapses_after, leech_after) VALUES "
                         "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", batch)
    conn.commit()
    conn.execute("ANALYZE")
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--reviews", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--db", type=Path, help="reuse/keep this database file")
    args = parser.parse_args()

    cold_help(max(5, args.runs // 3))

    now = dt.datetime.now(dt.UTC)
    folder = Path(tempfile.mkdtemp(prefix="dojo-bench-"))
    path = args.db or folder / "bench.sqlite3"
    if not path.exists():
        start = time.perf_counter()
        with Store.open(path) as probe:
            today = probe.study_day(now)
        fill(path, args.cards, args.reviews, today)
        print(f"(filled {args.cards:,} cards and {args.reviews:,} log rows in "
              f"{time.perf_counter() - start:.1f} s: {path.stat().st_size / 2**20:.0f} MiB)")
    with Store.open(path, auto_backup=False) as store:
        queue = store.today_queue(now)
        print(f"today's queue: {len(queue.reviews)} reviews, {len(queue.new)} new, "
              f"{len(queue.redrill)} re-drill")
        report(f"today_queue() with {args.cards:,} cards / {args.reviews:,} rows",
               timed(lambda: store.today_queue(now), args.runs), TARGET_MS)
        due = [i.question_id for i in queue.reviews][: args.runs]
        it = iter(due)

        def answer() -> None:
            store.answer(next(it), 4, correct=True, answer_text="x", response_ms=4000,
                         params={"n": 1}, now=now)

        report("answer() one review, one fsync'd transaction",
               timed(answer, min(args.runs, len(due))), TARGET_MS)
        report("undo() one answer", timed(lambda: store.undo(now), 5), TARGET_MS)
        report("stats: reviews_per_day(365)+streak+forecast",
               timed(lambda: (store.reviews_per_day(365, now), store.streak(now),
                              store.forecast(30, now)), 5), None)
        report("first open of the day (quick_check + backup)",
               timed(lambda: (store.check_integrity(), store.backup()), 1), None)


if __name__ == "__main__":
    main()
