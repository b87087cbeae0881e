"""Store sessions: connections, transactions, and SQLite failures told as StoreErrors.

Every write is one `BEGIN IMMEDIATE` transaction; `transaction()` groups several calls into one.
The other parts of `Store` (settings, cards, stats, lab) read and write only through
`_read`/`_write`."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from sqlalchemy import Engine, delete, false
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlalchemy.pool import ConnectionPoolEntry

from scheduler import backup as backups
from scheduler.errors import CorruptDatabaseError, DiskFullError, ReadOnlyDatabaseError, StoreError
from scheduler.models import SettingRow
from scheduler.paths import DB_NAME as DB_NAME  # one name, importable without SQLAlchemy

BUSY_TIMEOUT_MS = 10_000


def on_connect(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see on_begin)
    cursor = dbapi_conn.cursor()
    for pragma in (
        "journal_mode = WAL",
        "synchronous = FULL",
        "foreign_keys = ON",
        f"busy_timeout = {BUSY_TIMEOUT_MS}",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def on_begin(conn: Any) -> None:
    # IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
    # instead of one failing when it upgrades a read lock.
    write = conn.get_execution_options().get("dojo_write", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")



def raw_connection(s: Session) -> sqlite3.Connection:
    """The session's own sqlite3 connection: the reads shared with `scheduler.quick` (plain
    SQL, no SQLAlchemy) run on it inside the session's transaction."""
    conn = s.connection().connection.driver_connection
    assert isinstance(conn, sqlite3.Connection)
    return conn


def json_object(value: dict[str, Any] | None, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a dict, got {type(value).__name__}")
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be JSON-serialisable: {exc}") from exc


class StoreBase:
    """An open database's sessions; `Store` adds the parts on top."""

    def __init__(self, path: Path, engine: Engine) -> None:
        self.path = path
        self._engine = engine
        self._write_engine = engine.execution_options(dojo_write=True)
        # Problems that did not stop the app, for the learner to see once (a failed daily
        # backup, unreadable settings that fell back to their defaults).
        self.warnings: list[str] = []
        # (old timezone, old rollover, from ms, until ms): see update_settings
        self._day_hold: tuple[str | None, int, int, int] | None = None
        self.writable = True  # False when opened read-only for browsing
        self._scratch: Path | None = None  # a read-only open's private copy, removed on close
        # The session of a `transaction()` in progress, per thread: every read and write the
        # thread makes meanwhile joins it.
        self._local = threading.local()

    def close(self) -> None:
        self._engine.dispose()
        if self._scratch is not None:  # the private copy a read-only open browsed
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _read(self) -> Iterator[Session]:
        joined: Session | None = getattr(self._local, "session", None)
        if joined is not None:  # inside transaction(): see its own uncommitted rows
            with self._translated():
                yield joined
            return
        with self._translated(), Session(self._engine) as session, session.begin():
            yield session

    @contextmanager
    def _write(self) -> Iterator[Session]:
        joined: Session | None = getattr(self._local, "session", None)
        if joined is not None:
            with self._translated():
                yield joined
            return
        with (
            self._translated(),
            Session(self._write_engine, expire_on_commit=False) as session,
            session.begin(),
        ):
            yield session

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Make every store call inside the block one transaction: all of it commits or none.

        For writes that only make sense together (a lab attempt and the lab card its pass
        implies): a crash between them must not leave one without the other. Nested, it is a
        SAVEPOINT: an exception inside rolls back only the inner block (the outer one goes on).
        Per thread: another thread's calls are not part of it."""
        joined: Session | None = getattr(self._local, "session", None)
        if joined is not None:
            with self._translated(), joined.begin_nested():
                yield
            return
        with (
            self._translated(),
            Session(self._write_engine, expire_on_commit=False) as session,
            session.begin(),
        ):
            self._local.session = session
            try:
                yield
            finally:
                self._local.session = None

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """Turn SQLite's low-level failures into StoreErrors that say what to do: SQLAlchemy's
        and those of the plain-SQL reads run on the session's own connection
        (`raw_connection`)."""
        try:
            yield
        except (DBAPIError, sqlite3.Error) as exc:
            orig = exc.orig if isinstance(exc, DBAPIError) else exc
            text = str(orig)
            if isinstance(orig, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
                raise StoreError(
                    f"{self.path} stayed locked by another process for {BUSY_TIMEOUT_MS // 1000}"
                    " s; nothing was changed. Close the other Serving Dojo and try again."
                ) from exc
            if "disk is full" in text or "disk I/O error" in text:
                raise DiskFullError(
                    f"disk full: {self.path} could not be written ({text}); nothing was "
                    "saved. Free some disk space and try again."
                ) from exc
            if "readonly" in text or "read-only" in text:
                raise ReadOnlyDatabaseError(
                    f"{self.path} is read-only ({text}); nothing was saved. Make it and its "
                    "folder writable to study."
                ) from exc
            if "malformed" in text or "not a database" in text:
                raise CorruptDatabaseError(
                    f"{self.path} is damaged ({text}). Restore a copy from "
                    f"{backups.backup_dir(self.path)}."
                ) from exc
            raise

    def check_writable(self) -> None:
        """Raise ReadOnlyDatabaseError unless an answer could be saved now (an empty write
        transaction: the file, its folder and its -wal/-shm must all be writable). A session
        checks this before its first card instead of losing every answer to "not saved"."""
        if not self.writable:
            raise ReadOnlyDatabaseError(
                f"read-only: answers will not be saved ({self.path} is open for browsing "
                "only). Make it and its folder writable (chmod u+w) and start again to study.")
        refuse_read_only(self.path, True)
        with self._write() as s:  # a write that changes nothing, still refused when read-only
            s.execute(delete(SettingRow).where(false()))

    def check_integrity(self) -> None:
        """Raise CorruptDatabaseError unless SQLite's quick_check passes."""
        try:
            with self._engine.connect() as conn:
                rows = [str(r[0]) for r in conn.exec_driver_sql("PRAGMA quick_check")]
        except DBAPIError as exc:
            if "disk is full" in str(exc.orig):  # not a damaged file: say what it is
                raise DiskFullError(
                    f"disk full: {self.path} could not be opened ({exc.orig}); it was left "
                    "untouched. Free some disk space and try again."
                ) from exc
            rows = [str(exc.orig)]
        if rows != ["ok"]:
            raise CorruptDatabaseError(
                f"{self.path} failed SQLite's integrity check ({'; '.join(rows[:3])}). "
                f"Restore a copy from {backups.backup_dir(self.path)}."
            )


def refuse_read_only(path: Path, existed: bool) -> None:
    """A database we cannot write is healthy but unusable for study: say so (never 'corrupt' or
    'unreadable', which would invite the learner to discard it)."""
    folder_ok = os.access(path.parent, os.W_OK)
    file_ok = not existed or os.access(path, os.W_OK)
    # A -wal/-shm left read-only (by an older version's read-only browse) fails every write
    # even once the file itself is writable again: name it.
    stuck = [side for side in (path.with_name(path.name + "-wal"),
                               path.with_name(path.name + "-shm"))
             if existed and side.exists() and not os.access(side, os.W_OK)]
    if folder_ok and file_ok and not stuck:
        return
    if folder_ok and file_ok:
        raise ReadOnlyDatabaseError(
            f"read-only: answers will not be saved ({', '.join(str(p) for p in stuck)} cannot "
            "be written). Your data is intact: make it writable (chmod u+w) to study.")
    what = path if not file_ok else path.parent
    fix = (f"make {'it and its folder' if not file_ok else 'the folder'} writable (chmod u+w) "
           "to study")
    try:
        if os.statvfs(path.parent).f_flag & os.ST_RDONLY:
            fix = "the file system holding it is mounted read-only: remount it read-write to study"
    except (OSError, AttributeError):  # no statvfs (Windows): the chmod advice stands
        pass
    raise ReadOnlyDatabaseError(
        f"read-only: answers will not be saved ({what} cannot be written). Your data is "
        f"intact: {fix}."
    )


