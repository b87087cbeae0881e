"""Backups made with VACUUM INTO: a consistent snapshot even while the WAL is live.

Rolling backups are named `<stem>.<UTC stamp>.sqlite3` in a `backups/` folder beside the
database and rotated (newest N kept); pre-upgrade copies are named `<stem>.pre-v<N>.<stamp>`
and never rotated away. A copy is written to a `.partial` name first and renamed when whole.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sqlite3
from pathlib import Path

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


def snapshot(db_path: Path, target: Path) -> Path:
    """Write a consistent copy of the database to `target` with VACUUM INTO."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("VACUUM INTO ?", (str(partial),))
    except BaseException:
        partial.unlink(missing_ok=True)  # a failed copy (disk full) leaves nothing behind
        raise
    finally:
        conn.close()
    os.replace(partial, target)
    return target


def make_rolling_backup(db_path: Path, keep: int, now: dt.datetime | None = None) -> Path:
    """Snapshot into the rolling set, then delete all but the newest `keep`."""
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    target = backup_dir(db_path) / f"{db_path.stem}.{moment.strftime(_STAMP)}.sqlite3"
    while target.exists():  # two backups within one microsecond: keep both
        moment += dt.timedelta(microseconds=1)
        target = backup_dir(db_path) / f"{db_path.stem}.{moment.strftime(_STAMP)}.sqlite3"
    snapshot(db_path, target)
    for old in rolling_backups(db_path)[: -max(keep, 1)]:
        old.unlink(missing_ok=True)
    return target


def make_upgrade_backup(db_path: Path, from_version: int) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime(_STAMP)
    target = backup_dir(db_path) / f"{db_path.stem}.pre-v{from_version + 1}.{stamp}.sqlite3"
    return snapshot(db_path, target)
