"""The home screen's plain-sqlite3 counts (`scheduler.quick`) equal the store's queue and
streak on a real history, and give way to the store where only it can answer."""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from pathlib import Path

import pytest

from scheduler.plan import Plan
from scheduler.quick import cards_in_sync, quick_queue, quick_today
from scheduler.records import SyncResult
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


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def test_in_sync_exactly_when_a_sync_would_change_nothing(store: Store, db_path: Path) -> None:
    bank = [(f"q-{i}", "t") for i in range(6)]
    store.sync_cards(bank, retire_missing=True)
    grade(store, "q-3", 4, at(1))  # a reviewed card: its position no longer matters
    conn = _ro(db_path)
    try:
        assert cards_in_sync(conn, bank)
        assert cards_in_sync(conn, [bank[3], *bank[:3], *bank[4:]])  # only q-3 moved
        changed = {
            "a new question": [*bank, ("q-9", "t")],
            "a question gone": bank[:-1],
            "a topic changed": [("q-0", "other"), *bank[1:]],
            "new cards reordered": [bank[1], bank[0], *bank[2:]],
            "an empty bank": [],
        }
        for why, questions in changed.items():
            assert not cards_in_sync(conn, questions), why
        for why, questions in changed.items():
            if not questions:
                continue  # `sync_bank` never syncs an empty bank
            result = store.sync_cards(questions, retire_missing=True)
            assert cards_in_sync(conn, questions), why
            assert store.sync_cards(questions, retire_missing=True) == SyncResult(0, 0, 0), why
            assert result != SyncResult(0, 0, 0) or why == "new cards reordered", why
    finally:
        conn.close()


@pytest.mark.slow
def test_the_queue_equals_the_store_with_lab_recalls_and_a_plan(
        store: Store, db_path: Path) -> None:
    rng = random.Random(5)
    bank = [(f"q-{i:03d}", f"t{i % 3}") for i in range(40)]
    store.sync_cards(bank, retire_missing=True)
    store.update_settings(new_limit=5, review_limit=12)
    store.backup()  # the day's backup exists: opening the store would only read
    checked = 0
    for day in range(1, 16):
        if day == 6:
            store.set_plan(Plan(dt.date(2026, 4, 2), 30))
        morning, evening = at(day, 9), at(day, 20)
        assert quick_queue(db_path, bank, morning) == store.today_queue(morning)
        queue = store.today_queue(morning)
        for item in queue.items[: rng.randrange(2, 9)]:
            grade(store, item.question_id, rng.choice([1, 2, 4, 5]), morning)
        if day % 3 == 0:  # a failed lab case brings two questions back
            store.add_lab_recalls([(bank[day][0], "kv-bytes", 1, "case-a"),
                                   (bank[day + 1][0], "kv-bytes", 1, "case-b")], morning)
        got = quick_queue(db_path, bank, evening)
        assert got == store.today_queue(evening)
        checked += len(got.items) if got else 0
    assert checked > 40


def test_the_queue_gives_way_to_the_store(store: Store, db_path: Path) -> None:
    bank = [("q-1", "t"), ("q-2", "t")]
    store.sync_cards(bank, retire_missing=True)
    assert quick_queue(db_path, bank, at(1)) is None  # no backup yet today: the store makes it
    store.backup()
    assert quick_queue(db_path, bank, at(1)) == store.today_queue(at(1))
    assert quick_queue(db_path, [*bank, ("q-3", "t")], at(1)) is None  # the sync adds a card
    store.record_lab_attempt("kv-bytes", 1, "cpu", True, [], {}, 1.0, now=at(1))
    assert quick_queue(db_path, bank, at(1)) is None  # a pass without its card: a repair
    store.grade_lab_card("kv-bytes", 1, 4, passed=True, rebuild=False, now=at(1))
    assert quick_queue(db_path, bank, at(1)) == store.today_queue(at(1))
    assert quick_queue(db_path, bank, at(40)) is None  # the level is due for a rebuild
