"""The home screen's plain-sqlite3 counts (`scheduler.quick`) equal the store's queue and
streak on a real history, and give way to the store where only it can answer."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from scheduler.plan import Plan
from scheduler.quick import quick_today
from scheduler.store import Store
from tests.scheduler.conftest import at, grade


def _full(store: Store, now: dt.datetime) -> tuple[dt.date, int, int, int, int]:
    queue = store.today_queue(now)
    return (queue.day, len(queue.reviews), len(queue.new), len(queue.redrill),
            store.streak(now))


def _quick(path: Path, now: dt.datetime) -> tuple[dt.date, int, int, int, int]:
    got = quick_today(path, now)
    assert got is not None
    return got.day, got.due, got.new, got.redrill, got.streak


@pytest.mark.slow
def test_counts_equal_the_store_over_weeks_of_study(store: Store, db_path: Path) -> None:
    rng = random.Random(3)
    store.sync_cards([(f"q-{i:03d}", "t") for i in range(60)], retire_missing=True)
    store.update_settings(new_limit=6, review_limit=15)
    first = quick_today(db_path, at(1))
    assert first is not None and first.first_run and first.new == 6
    checked = 0
    for day in range(1, 30):
        if day in (9, 10, 17):
            continue  # days off: the streak restarts
        if day == 12:
            store.set_plan(Plan(dt.date(2026, 4, 20), 30))  # the plan paces new cards
        if day == 14:
            store.suspend("q-002")
        morning, evening = at(day, 9), at(day, 20)
        assert _quick(db_path, morning) == _full(store, morning)
        queue = store.today_queue(morning)
        for item in (*queue.reviews, *queue.new)[: rng.randrange(3, 12)]:
            grade(store, item.question_id, rng.choice([1, 2, 3, 4, 4, 5, 5]), morning)
        if day % 5 == 0 and queue.reviews:
            store.bury(queue.reviews[-1].question_id, morning)
        grade(store, "q-059", 2, morning, mode="cram")  # cram never counts as re-drill
        # Mid-day: some answered, some re-drills pending, some buried.
        assert _quick(db_path, evening) == _full(store, evening)
        checked += 2
    assert checked > 40
    last = quick_today(db_path, at(30))
    assert last is not None and not last.first_run and last.streak > 0


def test_gives_way_to_the_store(tmp_path: Path, store: Store, db_path: Path) -> None:
    assert quick_today(tmp_path / "none.sqlite3", at(1)) is None  # first run: store creates it
    store.sync_cards([("q-1", "t")], retire_missing=True)
    assert quick_today(db_path, at(1)) is not None
    with store._write() as s:  # a hand-edited, unusable setting: the store names it
        from scheduler.models import SettingRow

        s.merge(SettingRow(key="new_limit", value='"ten"'))
    assert quick_today(db_path, at(1)) is None
