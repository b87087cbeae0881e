"""trainer.core.store: the one way the app and the commands open the database, and the one
history export both write."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from scheduler.errors import ReadOnlyDatabaseError
from scheduler.store import Store
from trainer.core.store import export_history, new_export_path, open_store


def test_the_export_is_whole_atomic_and_importable(tmp_path: Path) -> None:
    with Store.open(tmp_path / "db" / "dojo.sqlite3") as store:
        store.sync_cards([("x", "kv")])
        store.answer("x", 4, correct=True, answer_text="4", response_ms=5)
        target = new_export_path(store, dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
        data = export_history(store, target)
    assert target == tmp_path / "db" / "exports" / "history-20260102T030405Z.json"
    assert json.loads(target.read_text(encoding="utf-8")) == data
    assert [r["question_id"] for r in data["reviews"]] == ["x"]
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no .partial left
    with Store.open(tmp_path / "other.sqlite3") as other:
        assert other.import_history(json.loads(target.read_text())).reviews_added == 1


def test_browsing_falls_back_to_read_only_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "dojo.sqlite3"
    Store.open(db).close()
    real_open = Store.open

    def unwritable(path: Path | None = None, **kw: Any) -> Store:
        if not kw.get("read_only"):
            raise ReadOnlyDatabaseError("read-only: answers will not be saved (test)")
        return real_open(path, **kw)

    monkeypatch.setattr(Store, "open", unwritable)
    with pytest.raises(ReadOnlyDatabaseError):
        open_store(db)
    said: list[str] = []
    with open_store(db, browse=True, on_read_only=said.append) as store:
        assert not store.writable
    assert said == ["read-only: answers will not be saved (test)"]
