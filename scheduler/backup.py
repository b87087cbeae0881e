"""Backups made with VACUUM INTO: a consistent snapshot even while the WAL is live.

Rolling backups are named `<stem>.<UTC stamp>.sqlite3` in a `backups/` folder beside the
database and rotated (newest N kept); pre-upgrade copies are named `<stem>.pre-v<N>.<stamp>`
and never rotated away. A copy is written to a `.partial` name, fsynced and integrity-checked,
then renamed into place and its folder fsynced; the next backup removes a `.partial` that a
killed backup left behind.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scheduler.faults import crash_point

_STAMP = "%Y%m%dT%H%M%S%fZ"


def backup_dir(db_path: Path) -> Path:
    return db_path.parent / "backups"


def _rolling_pattern(db_path: Path) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(db_path.stem)}\.(\d{{8}})T\d{{12}}Z\.sqlite3$")


def rolling_backups(db_path: Path) -> list[Path]:
    """Rolling backups of `db_path`, oldest first."""
    folder = backup_dir(db_path)
    if not folder.is_dir():
        return []
    pattern = _rolling_pattern(db_path)
    return sorted(p for p in folder.iterdir() if pattern.match(p.name))


def has_backup_on(db_path: Path, day: dt.date) -> bool:
    """Whether a rolling backup was made on this UTC calendar day."""
    pattern = _rolling_pattern(db_path)
    stamp = day.strftime("%Y%m%d")
    matches = (pattern.match(p.name) for p in rolling_backups(db_path))
    return any(m is not None and m.group(1) == stamp for m in matches)


@contextmanager
def _backup_lock(db_path: Path) -> Iterator[None]:
    """Hold `backups/.lock` while copying and rotating: two backups (two windows, the daily one
    and `dojo backup`) never remove each other's copy in progress, and a `.partial` found while
    holding the lock belongs to a backup that died (the kernel drops a dead process's lock)."""
    folder = backup_dir(db_path)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the rest still holds
        yield
        return
    with open(folder / ".lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def stale_partials(db_path: Path) -> list[Path]:
    """`.partial` copies of `db_path` left by a backup that was killed mid-copy."""
    folder = backup_dir(db_path)
    if not folder.is_dir():
        return []
    prefix = f"{db_path.stem}."
    return sorted(p for p in folder.iterdir()
                  if p.name.startswith(prefix) and p.name.endswith(".sqlite3.partial"))


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable (POSIX: the directory entry is data of the folder)."""
    if not hasattr(os, "O_DIRECTORY"):  # Windows cannot open a folder; its rename is durable
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def check_copy(path: Path) -> None:
    """Raise sqlite3.DatabaseError unless `path` passes SQLite's full integrity_check (opened
    immutable: checking a copy writes nothing beside it)."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()
    if rows != ["ok"]:
        raise sqlite3.DatabaseError(
            f"the backup copy failed its integrity check ({'; '.join(rows[:3])}); it was "
            "removed and the older backups were kept")


def snapshot(db_path: Path, target: Path) -> Path:
    """Write a consistent copy of the database to `target` with VACUUM INTO.

    Crash-safe in the usual order for an atomic replace: copy to `<target>.partial`, fsync it,
    check it (integrity_check), rename it into place, fsync the folder. A crash leaves either
    no `target` or a whole one; a leftover `.partial` is removed by the next backup."""
    with _backup_lock(db_path):
        for stale in stale_partials(db_path):
            stale.unlink(missing_ok=True)
        return _snapshot(db_path, target)


def _snapshot(db_path: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("VACUUM INTO ?", (str(partial),))
        conn.close()
        crash_point("backup-copied")
        _fsync_file(partial)
        check_copy(partial)
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)  # a failed copy (disk full) leaves nothing behind
        raise
    finally:
        conn.close()
    _fsync_dir(target.parent)
    return target


def make_rolling_backup(db_path: Path, keep: int, now: dt.datetime | None = None) -> Path:
    """Snapshot into the rolling set, then delete all but the newest `keep`.

    The rotation also deletes the `.partial` copies that killed backups left behind (each as
    large as the database). An older backup is only rotated out once the new copy is whole,
    fsynced and has passed its integrity check."""
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    with _backup_lock(db_path):
        target = backup_dir(db_path) / f"{db_path.stem}.{moment.strftime(_STAMP)}.sqlite3"
        while target.exists():  # two backups within one microsecond: keep both
            moment += dt.timedelta(microseconds=1)
            target = backup_dir(db_path) / f"{db_path.stem}.{moment.strftime(_STAMP)}.sqlite3"
        for stale in stale_partials(db_path):
            stale.unlink(missing_ok=True)
        _snapshot(db_path, target)
        for old in rolling_backups(db_path)[: -max(keep, 1)]:
            old.unlink(missing_ok=True)
    return target


def make_upgrade_backup(db_path: Path, from_version: int) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime(_STAMP)
    target = backup_dir(db_path) / f"{db_path.stem}.pre-v{from_version + 1}.{stamp}.sqlite3"
    return snapshot(db_path, target)
