"""Backups survive a crash: a backup killed mid-copy leaves a `.partial` that the next
backup removes; a copy is fsynced, integrity-checked, renamed, and its folder fsynced, in that
order; a copy that fails its check never rotates an older good backup out."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler import backup as backups
from scheduler.backup import backup_dir, make_rolling_backup, rolling_backups, stale_partials
from scheduler.faults import ENV as CRASH_ENV
from scheduler.store import Store

ROOT = Path(__file__).resolve().parents[2]


def _filled(db: Path) -> Path:
    with Store.open(db) as store:
        store.sync_cards([(f"q{i}", "t") for i in range(50)])
    return db


@pytest.mark.slow
def test_a_backup_killed_mid_copy_leaves_no_partial_after_the_next_one(tmp_path: Path) -> None:
    db = _filled(tmp_path / "dojo.sqlite3")
    env = {**os.environ, "PYTHONPATH": str(ROOT), CRASH_ENV: "backup-copied"}
    code = ("import sys; from pathlib import Path; from scheduler.store import Store; "
            "Store.open(Path(sys.argv[1]), auto_backup=False).backup()")
    killed = subprocess.run([sys.executable, "-c", code, str(db)], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = stale_partials(db)
    assert len(left) == 1 and left[0].stat().st_size > 0  # killed with the copy half-way done
    assert rolling_backups(db) == []

    with Store.open(db, auto_backup=False) as store:
        made = store.backup()
    assert stale_partials(db) == []
    assert list(backup_dir(db).glob("*.partial")) == []
    assert rolling_backups(db) == [made]


def test_the_rotation_counts_a_stale_partial_and_keeps_the_newest(tmp_path: Path) -> None:
    db = _filled(tmp_path / "dojo.sqlite3")
    first = make_rolling_backup(db, keep=2)
    stale = first.with_name(first.name + ".partial")
    stale.write_bytes(b"\0" * 4096)  # what a killed `dojo backup` leaves
    upgrade_stale = backup_dir(db) / "dojo.pre-v5.20260101T000000000000Z.sqlite3.partial"
    upgrade_stale.write_bytes(b"x")
    second = make_rolling_backup(db, keep=2)
    third = make_rolling_backup(db, keep=2)
    assert sorted(p.name for p in backup_dir(db).iterdir() if p.name != ".lock") == sorted(
        [second.name, third.name])


def test_a_backup_fsyncs_the_copy_then_renames_then_fsyncs_the_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _filled(tmp_path / "dojo.sqlite3")
    calls: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append(("replace", str(src)))
        real_replace(src, dst)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc/self/fd to name the fsynced files")
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    target = make_rolling_backup(db, keep=3)
    partial = str(target) + ".partial"
    assert calls == [("fsync", partial), ("replace", partial),
                     ("fsync", str(backup_dir(db)))]


def test_a_copy_that_fails_its_integrity_check_keeps_the_older_backups(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _filled(tmp_path / "dojo.sqlite3")
    good = make_rolling_backup(db, keep=1)
    real = backups._fsync_file

    def torn(path: Path) -> None:  # the copy comes out torn (a power cut, a bad disk)
        with open(path, "r+b") as f:
            f.seek(4096)
            f.write(b"\xff" * 8192)
        real(path)

    monkeypatch.setattr(backups, "_fsync_file", torn)
    with pytest.raises(sqlite3.DatabaseError):
        make_rolling_backup(db, keep=1)
    assert rolling_backups(db) == [good]  # the good one was not rotated out
    assert stale_partials(db) == []
