"""The file is trustworthy: crashes, concurrent writers, bad files, upgrades and backups."""

from __future__ import annotations

import itertools
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler import schema
from scheduler.backup import rolling_backups
from scheduler.errors import CorruptDatabaseError, NewerDatabaseError
from scheduler.sm2 import CardState
from scheduler.store import Store
from tests.scheduler.conftest import at, grade

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("worker.py")


def spawn(db: Path, action: str, prefix: str, count: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(WORKER), str(db), action, prefix, str(count)],
                            stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def assert_consistent(db: Path) -> int:
    """Every card's state is exactly the 'after' of its latest log row; returns row count."""
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with Store.open(db, auto_backup=False) as store:
        rows = 0
        for card in store.cards():
            history = store.history(card.question_id)
            rows += len(history)
            scheduled = [r for r in history if r.mode == "review"]
            if not scheduled:
                assert card.is_new and card.state == CardState.new()
            else:
                assert card.state == scheduled[-1].after and card.due == scheduled[-1].due_after
            for prev, nxt in itertools.pairwise(history):
                assert nxt.before == prev.after  # no answer lost or half-written in between
        return rows


@pytest.mark.slow
def test_killed_inside_the_answer_transaction_leaves_no_half_answer(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.sync_cards([("c0", "t"), ("c1", "t")])
        grade(store, "c1", 5, at(1))
        before = store.card("c0")
    proc = spawn(db_path, "block", "c", 1)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "inside"  # card row updated, log row flushed
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert assert_consistent(db_path) == 1
    with Store.open(db_path) as store:
        assert store.card("c0") == before and store.history("c0") == []
        grade(store, "c0", 4, at(1))  # the lock died with the process
        assert len(store.history("c0")) == 1


@pytest.mark.slow
def test_killed_at_random_moments_while_answering(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.sync_cards([(f"k{i}", "t") for i in range(20)])
    rng = random.Random(7)
    total = 0
    for _ in range(3):
        proc = spawn(db_path, "loop", "k", 20)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
        try:
            proc.wait(timeout=rng.uniform(0.05, 0.6))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        rows = assert_consistent(db_path)
        assert rows >= total  # committed answers are never lost
        total = rows
    assert total > 0


@pytest.mark.slow
def test_two_processes_answering_at_once_lose_nothing(db_path: Path) -> None:
    n = 30
    with Store.open(db_path) as store:
        store.sync_cards([(f"x{i}", "t") for i in range(n)] + [(f"y{i}", "t") for i in range(n)]
                         + [("shared", "t")])
    procs = [spawn(db_path, "answer", p, n) for p in ("x", "y")]
    for p in procs:
        assert p.wait(timeout=120) == 0
    assert assert_consistent(db_path) == 4 * n
    with Store.open(db_path, auto_backup=False) as store:
        assert all(not c.is_new for c in store.cards() if c.question_id != "shared")
        assert sorted(r.answer_text for r in store.history("shared")) == ["x"] * n + ["y"] * n


# -------------------------------------------------------------------------------- bad files
def _refused(path: Path, error: type[Exception], match: str) -> None:
    before = path.read_bytes()
    with pytest.raises(error, match=match) as info:
        Store.open(path)
    assert "untouched" in str(info.value) or "Restore" in str(info.value)
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


def test_garbage_file_is_refused_untouched(db_path: Path) -> None:
    db_path.write_bytes(random.Random(1).randbytes(8192))
    _refused(db_path, CorruptDatabaseError, "not a readable SQLite database")


def test_damaged_header_is_refused_untouched(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.sync_cards([("a", "t")])
    data = bytearray(db_path.read_bytes())
    data[0:16] = b"definitely-not!!"
    db_path.write_bytes(bytes(data))
    _refused(db_path, CorruptDatabaseError, "not a readable SQLite database")


@pytest.mark.slow
def test_damaged_page_is_caught_by_the_daily_check(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.sync_cards([(f"question-{i:05}", "topic " * 10) for i in range(3000)])
    data = bytearray(db_path.read_bytes())
    page = 4096
    assert len(data) > 20 * page
    data[10 * page : 11 * page] = random.Random(2).randbytes(page)
    db_path.write_bytes(bytes(data))
    _refused(db_path, CorruptDatabaseError, "integrity check")


@pytest.mark.slow
def test_damage_found_later_is_a_clear_error(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.sync_cards([(f"question-{i:05}", "topic " * 10) for i in range(3000)])
    Store.open(db_path).close()  # today's backup and check are done
    conn = sqlite3.connect(db_path)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'cards'").fetchone()
    conn.close()
    data = bytearray(db_path.read_bytes())
    data[(root - 1) * 4096 : root * 4096] = random.Random(2).randbytes(4096)
    db_path.write_bytes(bytes(data))
    with Store.open(db_path) as store, pytest.raises(CorruptDatabaseError, match="Restore"):
        store.cards()


def test_newer_version_is_refused_untouched(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.sync_cards([("a", "t")])
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {schema.SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    _refused(db_path, NewerDatabaseError, "newer release")


def test_foreign_sqlite_database_is_refused_untouched(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    _refused(db_path, CorruptDatabaseError, "not a Serving Dojo one")


# ------------------------------------------------------------------------------ upgrades
def _schema_signature(path: Path) -> dict[str, object]:
    conn = sqlite3.connect(path)
    sig: dict[str, object] = {"version": conn.execute("PRAGMA user_version").fetchone()[0]}
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
    for table in sorted(names):
        indexes = {}
        for _, name, unique, origin, partial in conn.execute(f"PRAGMA index_list('{table}')"):
            cols = [r[2] for r in conn.execute(f"PRAGMA index_info('{name}')")]
            key = name if origin == "c" else f"{origin}:{cols}"
            indexes[key] = (unique, origin, partial, cols)
        sig[table] = (
            sorted(conn.execute(f"PRAGMA table_info('{table}')").fetchall()),
            indexes,
            sorted(r[2:5] for r in conn.execute(f"PRAGMA foreign_key_list('{table}')")),
        )
    conn.close()
    return sig


def _make_v1(path: Path) -> None:
    conn = sqlite3.connect(path)
    for ddl in schema.V1_DDL:
        conn.execute(ddl)
    conn.execute("INSERT INTO cards VALUES ('old', 'kv', 0, 236, 3, 15, '2026-03-10', 1, 0, 0,"
                 " NULL, 0, 1000, 2000)")
    conn.execute(
        "INSERT INTO reviews VALUES (1, 'u1', 'old', 2000, '2026-02-23', 'review', 3, 1, 'x', 9,"
        " NULL, 250, 2, 6, '2026-02-23', 1, 0, 1500, 236, 3, 15, '2026-03-10', 1, 0)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_upgraded_database_equals_a_fresh_one(tmp_path: Path) -> None:
    old, fresh = tmp_path / "old.sqlite3", tmp_path / "fresh.sqlite3"
    _make_v1(old)
    Store.open(fresh).close()
    with Store.open(old) as store:
        card = store.card("old")
        assert (card.ef, card.interval, card.lapses) == (CardState(236).ef, 15, 1)
        assert store.history("old")[0].after == card.state
        store.record_lab_attempt("kv", 1, "cpu", True, [], {}, 1.0)  # the v2 table works
    assert _schema_signature(old) == _schema_signature(fresh)
    assert _schema_signature(fresh)["version"] == schema.SCHEMA_VERSION
    copies = list((tmp_path / "backups").glob("old.pre-v2.*.sqlite3"))
    assert len(copies) == 1
    conn = sqlite3.connect(copies[0])
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1  # the copy is the old file
    conn.close()


def test_a_failing_upgrade_step_leaves_the_old_file_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "old.sqlite3"
    _make_v1(old)

    def broken_step(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE lab_attempts (id INTEGER PRIMARY KEY)")
        raise RuntimeError("disk full, say")

    monkeypatch.setitem(schema.UPGRADES, 1, broken_step)
    with pytest.raises(RuntimeError, match="disk full"):
        Store.open(old)
    conn = sqlite3.connect(old)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "lab_attempts" not in tables  # the half-done step was rolled back
    conn.close()
    monkeypatch.undo()
    with Store.open(old) as store:
        assert store.card("old").interval == 15


# -------------------------------------------------------------------------------- backups
def test_backups_rotate_and_restore(db_path: Path) -> None:
    with Store.open(db_path) as store:
        store.sync_cards([("a", "t")])
        store.update_settings(backup_keep=3)
        made = [store.backup() for _ in range(5)]
        grade(store, "a", 5, at(1))
    assert rolling_backups(db_path) == made[-3:]
    with Store.open(made[-1], auto_backup=False) as copy:
        assert copy.card("a").is_new  # a consistent snapshot from before the answer


def test_first_open_each_day_makes_one_backup(db_path: Path) -> None:
    Store.open(db_path).close()  # a brand-new file has nothing to back up
    assert rolling_backups(db_path) == []
    Store.open(db_path).close()
    Store.open(db_path).close()
    assert len(rolling_backups(db_path)) == 1
