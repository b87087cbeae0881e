"""FSRS vs SM-2: the time from `Store.answer` to its commit, side by side in one run.

  python bench/fsrs_answer.py [--answers 2000] [--cards 200] [--runs 200]

Builds one database with ANSWERS answers over CARDS cards (a year of SM-2 study, answers
recorded through `Store.answer`), copies it, sets `scheduler=fsrs` on the copy, then answers a
due card in each database in turn, RUNS times (each answer undone afterwards, outside the
timing, so every run answers the same kind of card). Prints median and p95 for each and their
ratio. The FSRS memory lives on the card, so an FSRS answer does not replay the card's history.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scheduler.store import Store  # noqa: E402

START = dt.datetime(2025, 1, 1, 12, tzinfo=dt.UTC)


def build(path: Path, answers: int, cards: int) -> dt.datetime:
    """A history of `answers` scheduled answers; returns the day after the last one."""
    rng = random.Random(0)
    with Store.open(path) as store:
        store.update_settings(timezone="UTC", new_limit=cards, review_limit=10_000)
        store.sync_cards((f"q{i:04}", f"t{i % 12}") for i in range(cards))
        now, given = START, 0
        while given < answers:
            for item in store.today_queue(now).items:
                if given >= answers:
                    break
                if item.kind in ("review", "new"):
                    q = rng.choice((1, 3, 4, 4, 4, 5))
                    store.answer(item.question_id, q, correct=q >= 3, answer_text="x",
                                 response_ms=9000, now=now)
                    given += 1
            now += dt.timedelta(days=1)
        return now


def percentile(samples: list[float], p: float) -> float:
    return sorted(samples)[round(p * (len(samples) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--cards", type=int, default=200)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="fsrs-bench-"))
    try:
        sm2_path, fsrs_path = folder / "sm2.sqlite3", folder / "fsrs.sqlite3"
        now = build(sm2_path, args.answers, args.cards)
        shutil.copy(sm2_path, fsrs_path)
        with Store.open(sm2_path) as sm2, Store.open(fsrs_path) as fsrs:
            fsrs.update_settings(scheduler="fsrs")
            due = [i.question_id for i in sm2.today_queue(now + dt.timedelta(days=30)).reviews]
            when = now + dt.timedelta(days=400)  # every introduced card is due by then
            samples: dict[str, list[float]] = {"sm2": [], "fsrs": []}
            for run in range(args.runs):
                qid = due[run % len(due)]
                for name, store in (("sm2", sm2), ("fsrs", fsrs)):
                    start = time.perf_counter()
                    result = store.answer(qid, 4, correct=True, answer_text="x",
                                          response_ms=9000, now=when)
                    samples[name].append((time.perf_counter() - start) * 1000)
                    store.undo(review_id=result.review_id)
        print(f"{args.answers} answers over {args.cards} cards; {args.runs} answers each, "
              "interleaved; answer -> commit (fsync'd transaction)")
        for name, values in samples.items():
            print(f"  {name:<5} median {statistics.median(values):7.2f} ms   "
                  f"p95 {percentile(values, 0.95):7.2f} ms")
        ratio = percentile(samples["fsrs"], 0.95) / percentile(samples["sm2"], 0.95)
        print(f"  p95 ratio fsrs / sm2: {ratio:.2f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
