"""The learner's SQLite database: cards, the answer log, settings, flags and lab attempts.

`Store` is the one entry: this module opens the file (create, upgrade, back up, or browse
read-only); what an open store does lives in its parts under `scheduler.storage` (sessions,
settings, cards, stats, lab records, export/import).

Every write is one `BEGIN IMMEDIATE` transaction (an answer's card update and its log row
commit together or not at all); WAL with synchronous=FULL makes a committed answer survive a
crash or power cut; a busy timeout lets several processes share the file.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from sqlalchemy import create_engine, event

from scheduler import backup as backups
from scheduler import schema
from scheduler.days import real_utc_now
from scheduler.errors import ReadOnlyDatabaseError, StoreError
from scheduler.paths import data_dir
from scheduler.quick import MATURE_DAYS
from scheduler.setting_checks import SCHEDULERS
from scheduler.storage.base import BUSY_TIMEOUT_MS, DB_NAME, on_begin, on_connect, refuse_read_only
from scheduler.storage.cards import CardsPart
from scheduler.storage.exchange import ExchangePart
from scheduler.storage.lab import LabPart
from scheduler.storage.mock import MockPart
from scheduler.storage.stats import INTERVAL_BUCKETS, StatsPart


class Store(CardsPart, StatsPart, LabPart, MockPart, ExchangePart):
    """One open learner database. Open with `Store.open()`; use as a context manager."""

    # ----------------------------------------------------------------------------- opening
    @classmethod
    def open(
        cls, path: Path | None = None, *, auto_backup: bool = True, read_only: bool = False
    ) -> Store:
        """Open (creating or upgrading) the database at `path`, default data_dir()/dojo.sqlite3.

        Refuses, untouched, a file that is not a Serving Dojo database, is corrupted, or was
        written by a newer release. Before an upgrade a copy goes to `backups/`; on the first
        open of each UTC day the file is integrity-checked and a rolling backup is made (a
        failed backup, e.g. on a full disk, is a warning in `warnings`, not a refusal).

        `read_only` browses an existing database that cannot be written (a read-only folder):
        nothing is created, upgraded or backed up, and every write fails with
        ReadOnlyDatabaseError.
        """
        if read_only:
            return cls._open_read_only(
                (path if path is not None else data_dir() / DB_NAME).expanduser())
        path = (path if path is not None else data_dir() / DB_NAME).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # under a read-only folder: nothing to open, nowhere to create
            raise ReadOnlyDatabaseError(
                f"read-only: answers will not be saved ({path.parent} cannot be created: "
                f"{exc.strerror or exc}). Make its parent folder writable to start.") from exc
        existed = path.exists() and path.stat().st_size > 0
        if existed:
            _refuse_unreadable(path)
        refuse_read_only(path, existed)
        version = schema.inspect_version(path) if existed else 0
        if version and version < schema.SCHEMA_VERSION:
            backups.make_upgrade_backup(path, version)
        if version < schema.SCHEMA_VERSION:
            cls._migrate(path)
        engine = create_engine(f"sqlite+pysqlite:///{path}", connect_args={"timeout": 10})
        event.listen(engine, "connect", on_connect)
        event.listen(engine, "begin", on_begin)
        store = cls(path, engine)
        try:
            store._repair_lab_cards()
            if auto_backup and version and not backups.has_backup_on(path, real_utc_now().date()):
                store.check_integrity()
                try:
                    store.backup()
                except (sqlite3.Error, OSError) as exc:  # e.g. disk full: study on, say so
                    store.warnings.append(
                        f"today's backup could not be made ({exc}); your data is untouched. "
                        f"Free some disk space and run `dojo backup`."
                    )
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _open_read_only(cls, path: Path) -> Store:
        if not path.exists():
            raise StoreError(
                f"read-only: answers will not be saved, and {path} does not exist yet, so "
                f"there is nothing to show. Make {path.parent} writable to start.")
        _refuse_unreadable(path)
        uri, scratch = _read_only_source(path)
        try:
            version = schema.inspect_version(path, uri=uri)
            if version != schema.SCHEMA_VERSION:
                raise ReadOnlyDatabaseError(
                    f"{path} needs an upgrade (schema {version}), which cannot be written to a "
                    "read-only folder; make it writable and start again")
        except BaseException:
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            raise
        engine = create_engine(
            "sqlite+pysqlite://",
            creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False),
        )
        event.listen(engine, "begin", on_begin)
        store = cls(path, engine)
        store.writable = False
        store._scratch = scratch
        return store

    @staticmethod
    def _migrate(path: Path) -> None:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            schema.upgrade(conn, path)
        finally:
            conn.close()

    def backup(self) -> Path:
        """Make a rolling backup now (VACUUM INTO) and return its path; keeps the newest N."""
        return backups.make_rolling_backup(self.path, self.settings().backup_keep)


def _refuse_unreadable(path: Path) -> None:
    """A file the learner may not read is a permissions problem, not a damaged database."""
    if not os.access(path, os.R_OK):
        raise StoreError(
            f"{path} cannot be read with your permissions (it was left untouched): give "
            "yourself read access (chmod u+r) or run as its owner.")


def _read_only_source(path: Path) -> tuple[str, Path | None]:
    """The SQLite URI that browses `path` without writing anything beside it, and the private
    folder to remove on close (or None).

    A WAL database normally needs its `-shm`/`-wal` files beside it, which a read-only folder
    cannot get and a read-only file would get with the file's read-only mode (breaking the next
    writable open). With no pending WAL the file is whole: open it `immutable=1` (SQLite's
    documented way; nothing created). With a pending WAL (committed answers not yet in the
    main file, e.g. after a crash), immutable would hide them: copy the file and its WAL into a
    private temporary folder and open the copy `mode=ro` there."""
    wal = path.with_name(path.name + "-wal")
    try:
        pending = wal.exists() and wal.stat().st_size > 0
    except OSError:
        pending = False
    if not pending:
        return f"{path.resolve().as_uri()}?mode=ro&immutable=1", None
    scratch = Path(tempfile.mkdtemp(prefix="dojo-read-only-"))
    try:
        shutil.copyfile(path, scratch / path.name)
        shutil.copyfile(wal, scratch / wal.name)
    except OSError as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise StoreError(
            f"read-only: {path} and its journal {wal.name} could not be read to browse them "
            f"({exc}); they were left untouched.") from exc
    return f"{(scratch / path.name).as_uri()}?mode=ro", scratch


__all__ = ["BUSY_TIMEOUT_MS", "DB_NAME", "INTERVAL_BUCKETS", "MATURE_DAYS", "SCHEDULERS", "Store",
           "StoreError"]
