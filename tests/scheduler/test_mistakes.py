"""Named mistakes in the store: a named mistake and a typo override are logged with the answer,
survive export/import and upgrades, and feed "recurring mistakes" and the override counts."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from scheduler import schema
from scheduler.errors import HistoryFormatError
from scheduler.store import Store
from tests.scheduler.conftest import at


def _wrong(store: Store, qid: str, mistake: str | None, day: int, *,
           overridden: bool = False, mode: str = "review") -> None:
    store.answer(qid, 4 if overridden else 1, correct=overridden, answer_text="x",
                 response_ms=5, now=at(day), mode=mode,  # type: ignore[arg-type]
                 mistake_id=mistake, overridden=overridden)


def test_mistake_and_override_are_logged_and_exported(store: Store, tmp_path: Path) -> None:
    store.sync_cards([("lat", "latency"), ("mcq", "kv")])
    _wrong(store, "lat", "ttft-plus-n-tpot", 1)
    _wrong(store, "mcq", None, 1, overridden=True)
    (lat,) = store.history("lat")
    (mcq,) = store.history("mcq")
    assert (lat.mistake_id, lat.overridden) == ("ttft-plus-n-tpot", False)
    assert (mcq.mistake_id, mcq.overridden, mcq.correct) == (None, True, True)
    exported = store.export_history()
    assert [(r["mistake_id"], r["overridden"]) for r in exported["reviews"]] == [
        ("ttft-plus-n-tpot", False), (None, True)]
    with Store.open(tmp_path / "other.sqlite3") as other:
        other.import_history(exported)
        assert [(r.mistake_id, r.overridden) for r in other.history("lat") + other.history(
            "mcq")] == [("ttft-plus-n-tpot", False), (None, True)]


def test_a_file_exported_before_v3_imports_with_no_mistakes(store: Store,
                                                            tmp_path: Path) -> None:
    store.sync_cards([("a", "kv")])
    _wrong(store, "a", "m1", 1)
    exported = store.export_history()
    for review in exported["reviews"]:
        del review["mistake_id"], review["overridden"]
    with Store.open(tmp_path / "other.sqlite3") as other:
        other.import_history(exported)
        (review,) = other.history("a")
        assert (review.mistake_id, review.overridden) == (None, False)


@pytest.mark.parametrize("key,value", [("mistake_id", ""), ("mistake_id", 3),
                                       ("overridden", "yes"), ("overridden", None)])
def test_bad_mistake_fields_are_refused_by_name(store: Store, key: str, value: object) -> None:
    store.sync_cards([("a", "kv")])
    _wrong(store, "a", "m1", 1)
    exported = store.export_history()
    exported["reviews"][0][key] = value
    with pytest.raises(HistoryFormatError, match=rf"reviews\[0\]\.{key}"):
        store.import_history(exported)


def test_an_empty_mistake_id_is_refused(store: Store) -> None:
    store.sync_cards([("a", "kv")])
    with pytest.raises(ValueError, match="mistake_id"):
        _wrong(store, "a", "", 1)


def test_recurring_mistakes_count_the_last_30_days_without_overrides(store: Store) -> None:
    store.sync_cards([("lat", "latency"), ("mcq", "kv")])
    for day in (1, 2, 3):                        # day 1 falls out of a 30-day window on day 31
        _wrong(store, "lat", "plus-tpot", day, mode="review" if day == 1 else "cram")
    _wrong(store, "mcq", "choice:2", 30, mode="cram")
    _wrong(store, "mcq", "choice:2", 31, mode="cram")
    _wrong(store, "mcq", "choice:1", 31, mode="cram", overridden=True)  # a typo: not counted
    _wrong(store, "lat", "other", 31, mode="cram")
    rows = store.recurring_mistakes(30, now=at(31))
    assert [(m.question_id, m.mistake_id, m.count) for m in rows] == [
        ("mcq", "choice:2", 2), ("lat", "plus-tpot", 2), ("lat", "other", 1)]  # tie: recent 1st
    assert rows[0].topic == "kv" and rows[0].last_day == at(31).date()
    assert store.recurring_mistakes(30, now=at(31), limit=1)[0].mistake_id == "choice:2"
    assert store.recurring_mistakes(1, now=at(40)) == []


def test_overrides_are_counted_beside_accuracy(store: Store) -> None:
    store.sync_cards([("a", "kv"), ("b", "kv")])
    _wrong(store, "a", None, 1, overridden=True)
    _wrong(store, "b", "m", 1)
    acc = store.topic_accuracy()["kv"]
    assert (acc.answered, acc.correct, acc.overridden) == (2, 1, 1)
    assert store.overrides(30, now=at(1)) == 1
    assert store.overrides(30, now=at(31)) == 0


def test_a_v2_database_upgrades_with_its_answers_unmarked(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite3"
    conn = sqlite3.connect(path)
    for ddl in schema.V1_DDL:
        conn.execute(ddl)
    schema.UPGRADES[1](conn)
    conn.execute("INSERT INTO cards VALUES ('old', 'kv', 0, 250, 1, 1, '2026-03-02', 0, 0, 0,"
                 " NULL, 0, 1000, 2000)")
    conn.execute(
        "INSERT INTO reviews VALUES (1, 'u1', 'old', 2000, '2026-03-01', 'review', 4, 1, 'x', 9,"
        " NULL, 250, 0, 0, NULL, 0, 0, NULL, 250, 1, 1, '2026-03-02', 0, 0)")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with Store.open(path) as store:
        (review,) = store.history("old")
        assert (review.mistake_id, review.overridden) == (None, False)
        store.answer("old", 1, correct=False, answer_text="y", response_ms=1, now=at(2),
                     mistake_id="m")
        assert store.history("old")[-1].mistake_id == "m"
    assert len(list((tmp_path / "backups").glob("v2.pre-v3.*.sqlite3"))) == 1
