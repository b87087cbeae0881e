"""Export → import: a faithful round trip, idempotent, validated all-or-nothing."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.errors import HistoryFormatError
from scheduler.store import Store
from tests.scheduler.conftest import at, grade


def _without_stamp(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "exported_at"}


@pytest.fixture
def filled(store: Store) -> Store:
    store.sync_cards([("a", "kv"), ("b", "batching"), ("c", "kv")])
    grade(store, "a", 5, at(1))
    grade(store, "b", 2, at(1))
    store.answer("b", 4, correct=True, answer_text="ok", response_ms=10,
                  params={"n": [1, 2]}, now=at(1, 13), mode="redrill")
    grade(store, "a", 4, at(2))
    store.suspend("c")
    store.record_lab_attempt("rope", 1, "cpu", True, [{"case": "x"}], {"err": 0.0}, 1.5)
    return store


def test_round_trip_into_an_empty_database(filled: Store, tmp_path: Path) -> None:
    exported = filled.export_history()
    text = json.dumps(exported)  # JSON-ready as is
    with Store.open(tmp_path / "other.sqlite3") as other:
        summary = other.import_history(json.loads(text))
        assert (summary.cards_added, summary.reviews_added, summary.lab_attempts_added) == (
            3, 4, 1)
        assert _without_stamp(other.export_history()) == _without_stamp(exported)
        assert other.card("a") == filled.card("a") and other.card("c").suspended
        assert other.history("b") == filled.history("b")
        assert other.lab_attempts()[0].cases == [{"case": "x"}]
        again = other.import_history(json.loads(text))
        assert (again.cards_added, again.cards_updated, again.reviews_added,
                again.reviews_skipped, again.lab_attempts_added) == (0, 0, 0, 4, 0)
        assert _without_stamp(other.export_history()) == _without_stamp(exported)


def test_newer_reviews_win_and_local_progress_is_kept(filled: Store, tmp_path: Path) -> None:
    with Store.open(tmp_path / "other.sqlite3") as other:
        other.import_history(filled.export_history())
        grade(other, "a", 5, at(8))  # progress on the other machine
        newer = other.card("a")
        summary = filled.import_history(other.export_history())
        assert (summary.reviews_added, summary.cards_updated) == (1, 1)
        assert filled.card("a").state == newer.state and filled.card("a").due == newer.due
        # Importing the older file back does not roll the other machine back.
        assert other.import_history(filled.export_history()).cards_updated == 0
        assert other.card("a").state == newer.state


def _break(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    broken = copy.deepcopy(doc)
    target = broken
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return broken


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("format",), "anki", "format"),
        (("version",), 99, "version"),
        (("reviews", 1, "quality"), 6, r"reviews\[1\]\.quality"),
        (("reviews", 0, "mode"), "later", r"reviews\[0\]\.mode"),
        (("reviews", 2, "question_id"), "zzz", "has no entry in cards"),
        (("reviews", 3, "before", "ef_hundredths"), 120, r"reviews\[3\]\.before\.ef"),
        (("reviews", 3, "uid"), KeyError, r"reviews\[3\]\.uid: missing"),
        (("cards", 0, "due"), "tomorrow", r"cards\[0\]\.due"),
        (("cards", 1, "suspended"), "yes", r"cards\[1\]\.suspended"),
        (("lab_attempts", 0, "cases"), {"a": 1}, r"lab_attempts\[0\]\.cases"),
        (("reviews",), {}, "reviews: expected a list"),
        # each imported before, or raised OverflowError out of the import (a traceback): past
        # SQLite's INTEGER, past a datetime, or an SM-2 state whose third review overflowed
        (("reviews", 0, "reviewed_ms"), 10**20,
         r"reviews\[0\]\.reviewed_ms: expected an integer 0\.\.253402300799999"),
        (("reviews", 0, "reviewed_ms"), -10**15, r"reviews\[0\]\.reviewed_ms"),
        (("cards", 0, "position"), 10**30, r"cards\[0\]\.position"),
        (("cards", 0, "ef_hundredths"), 10**9,
         r"cards\[0\]\.ef_hundredths: expected an integer 130\.\.1000"),
        (("cards", 0, "interval"), 10**12, r"cards\[0\]\.interval: expected an integer 0\.\.36500"),
    ],
)
def test_invalid_files_are_refused_whole(
    filled: Store, tmp_path: Path, path: tuple[Any, ...], value: Any, message: str
) -> None:
    doc = filled.export_history()
    with Store.open(tmp_path / "other.sqlite3") as other:
        with pytest.raises(HistoryFormatError, match=message):
            other.import_history(_break(doc, path, value))
        assert other.cards() == [] and other.lab_attempts() == []  # nothing half-imported


def test_duplicate_uids_are_refused(filled: Store) -> None:
    doc = filled.export_history()
    doc["reviews"][1]["uid"] = doc["reviews"][0]["uid"]
    with pytest.raises(HistoryFormatError, match="duplicate uid"):
        filled.import_history(doc)
    with pytest.raises(HistoryFormatError, match="top level"):
        filled.import_history([])  # type: ignore[arg-type]


def test_mock_rounds_travel_in_export_and_import(store: Store, tmp_path: Path) -> None:
    """A finished round's score (the mock chart) and an open round (to resume) survive a move
    to another machine, once each however often the file is imported."""
    store.save_mock_round({"items": [{"id": "a", "score": 1.0}]}, started=at(1),
                                 minutes=30, finished=at(1, 13), score=0.75)
    still_open = store.save_mock_round({"items": [], "cursor": 2}, started=at(2), minutes=45)
    exported = json.loads(json.dumps(store.export_history()))
    assert [m["started_ms"] for m in exported["mock_rounds"]] == [
        int(at(1).timestamp() * 1000), int(at(2).timestamp() * 1000)]
    with Store.open(tmp_path / "other.sqlite3") as other:
        assert other.import_history(exported).mock_rounds_added == 2
        assert [(when, score, state) for _, when, score, state in other.mock_rounds()] == [
            (at(1, 13), 0.75, {"items": [{"id": "a", "score": 1.0}]})]
        opened = other.open_mock_round()
        assert opened is not None and opened[1] == {"items": [], "cursor": 2}
        assert other.import_history(exported).mock_rounds_added == 0
        assert len(other.mock_rounds()) == 1
        # The open round finished on the first machine: importing again closes it here.
        store.save_mock_round({"items": [], "cursor": 3}, round_id=still_open, started=at(2),
                              minutes=45, finished=at(2, 14), score=0.5)
        assert other.import_history(store.export_history()).mock_rounds_added == 0
        assert [score for _, _, score, _ in other.mock_rounds()] == [0.75, 0.5]
        assert other.open_mock_round() is None


def test_files_without_mock_rounds_still_import(filled: Store, tmp_path: Path) -> None:
    exported = filled.export_history()
    del exported["mock_rounds"]
    with Store.open(tmp_path / "other.sqlite3") as other:
        assert other.import_history(exported).mock_rounds_added == 0
        exported["mock_rounds"] = [{"started_ms": 1, "finished_ms": None, "minutes": 30,
                                    "score": 2.0, "state": {}}]
        with pytest.raises(HistoryFormatError, match=r"mock_rounds\[0\]\.score"):
            other.import_history(exported)
