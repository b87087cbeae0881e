"""The app's store fsyncs every commit (WAL, synchronous = FULL); the test session's stores do
not (tests/conftest.py `_commits_without_fsync`), and this keeps the app's setting checked."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from scheduler.storage.base import on_connect
from scheduler.store import DB_NAME, Store


def test_the_apps_connections_sync_every_commit(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db")
    try:
        on_connect(conn, None)  # type: ignore[arg-type]
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_the_test_sessions_stores_keep_the_apps_other_pragmas(tmp_path: Path) -> None:
    store = Store.open(tmp_path / DB_NAME)
    try:
        with store._engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert isinstance(raw, sqlite3.Connection)
            assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert raw.execute("PRAGMA foreign_keys").fetchone()[0] == 1
            assert raw.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
            assert raw.execute("PRAGMA synchronous").fetchone()[0] == 0  # OFF: the session's
    finally:
        store.close()
