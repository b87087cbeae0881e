"""Fixtures for the scheduler: a real SQLite file per test, pinned to UTC unless a test says."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest

from scheduler.records import Mode, ReviewResult
from scheduler.store import Store

UTC = dt.UTC


def at(day: int, hour: int = 12, month: int = 3, year: int = 2026) -> dt.datetime:
    """Noon UTC on a day of March 2026 (days past 31 roll into April and beyond)."""
    return dt.datetime(year, month, 1, hour, tzinfo=UTC) + dt.timedelta(days=day - 1)


def grade(store: Store, qid: str, quality: int, now: dt.datetime,
          mode: Mode = "review") -> ReviewResult:
    return store.answer(qid, quality, correct=quality >= 3, answer_text=f"a{quality}",
                        response_ms=1000, params=None, now=now, mode=mode)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "dojo.sqlite3"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store.open(db_path) as s:
        s.update_settings(timezone="UTC")
        yield s
