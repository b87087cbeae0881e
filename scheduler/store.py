"""The learner's SQLite database: cards, the answer log, settings, flags and lab attempts.

Every write is one `BEGIN IMMEDIATE` transaction (an answer's card update and its log row
commit together or not at all); WAL with synchronous=FULL makes a committed answer survive a
crash or power cut; a busy timeout lets several processes share the file.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields, replace
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, delete, event, false, func, select, update
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlalchemy.pool import ConnectionPoolEntry
from sqlalchemy.sql.elements import ColumnElement, SQLColumnExpression
from sqlalchemy.sql.expression import case

from scheduler import backup as backups
from scheduler import schema, transition
from scheduler.days import from_ms, real_utc_now, resolve_timezone, study_day, to_ms, utc_now
from scheduler.errors import (
    AnsweredElsewhereError,
    CorruptDatabaseError,
    DiskFullError,
    ReadOnlyDatabaseError,
    StoreError,
    UnknownCardError,
)
from scheduler.models import (
    CardRow,
    FlagRow,
    LabAttemptRow,
    LabCardRow,
    LabRecallRow,
    MockRoundRow,
    ReviewRow,
    SettingRow,
)
from scheduler.paths import data_dir
from scheduler.records import (
    MODES,
    Card,
    Flag,
    ImportSummary,
    LabAttempt,
    LabCard,
    LabCardResult,
    MistakeCount,
    Mode,
    Queue,
    QueueItem,
    Retention,
    Review,
    ReviewResult,
    Settings,
    SyncResult,
    TopicAccuracy,
    UndoResult,
)
from scheduler.sm2 import CardState, check_quality

if TYPE_CHECKING:
    from scheduler.plan import Plan

DB_NAME = "dojo.sqlite3"
BUSY_TIMEOUT_MS = 10_000
MATURE_DAYS = 21
INTERVAL_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1d", 1, 1),
    ("2-6d", 2, 6),
    ("7-20d", 7, 20),
    ("21-59d", 21, 59),
    ("60-179d", 60, 179),
    ("180d+", 180, None),
)


def _on_connect(dbapi_conn: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see _on_begin)
    cursor = dbapi_conn.cursor()
    for pragma in (
        "journal_mode = WAL",
        "synchronous = FULL",
        "foreign_keys = ON",
        f"busy_timeout = {BUSY_TIMEOUT_MS}",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _on_begin(conn: Any) -> None:
    # IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
    # instead of one failing when it upgrades a read lock.
    write = conn.get_execution_options().get("dojo_write", False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _count_where(condition: SQLColumnExpression[bool]) -> ColumnElement[int]:
    """How many rows satisfy `condition`, as an integer column.

    Never `func.sum(condition)`: SQLAlchemy types that sum as the condition's Boolean and turns
    the count into True/False when reading it back, so 43 successes would read as 1."""
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _json_object(value: dict[str, Any] | None, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be a dict, got {type(value).__name__}")
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be JSON-serialisable: {exc}") from exc


def _card(row: CardRow) -> Card:
    return Card(
        question_id=row.question_id,
        topic=row.topic,
        state=CardState(row.ef, row.repetitions, row.interval),
        due=row.due,
        lapses=row.lapses,
        leech=row.leech,
        suspended=row.suspended,
        buried_until=row.buried_until,
        retired=row.retired,
        created_at=from_ms(row.created_ms),
        last_reviewed_at=None if row.last_reviewed_ms is None else from_ms(row.last_reviewed_ms),
    )


def _review(row: ReviewRow) -> Review:
    return Review(
        id=row.id,
        uid=row.uid,
        question_id=row.question_id,
        reviewed_at=from_ms(row.reviewed_ms),
        day=row.study_day,
        mode=row.mode,  # type: ignore[arg-type]  # constrained on write
        quality=row.quality,
        correct=row.correct,
        answer_text=row.answer_text,
        response_ms=row.response_ms,
        params=None if row.params is None else json.loads(row.params),
        before=CardState(row.ef_before, row.reps_before, row.interval_before),
        after=CardState(row.ef_after, row.reps_after, row.interval_after),
        due_before=row.due_before,
        due_after=row.due_after,
        mistake_id=row.mistake_id,
        overridden=row.overridden,
    )


def _lab_attempt(row: LabAttemptRow) -> LabAttempt:
    return LabAttempt(
        id=row.id,
        exercise=row.exercise,
        level=row.level,
        device=row.device,
        passed=row.passed,
        cases=json.loads(row.cases),
        metrics=json.loads(row.metrics),
        duration_s=row.duration_s,
        created_at=from_ms(row.created_ms),
    )


def _lab_card(row: LabCardRow) -> LabCard:
    return LabCard(
        exercise=row.exercise,
        level=row.level,
        state=CardState(row.ef, row.repetitions, row.interval),
        due=row.due,
        lapses=row.lapses,
        leech=row.leech,
        created_at=from_ms(row.created_ms),
        last_reviewed_day=row.last_reviewed_day,
        last_passed_at=None if row.last_passed_ms is None else from_ms(row.last_passed_ms),
        last_pass_s=row.last_pass_s,
        last_pass_gradings=row.last_pass_gradings,
    )


class Store:
    """One open learner database. Open with `Store.open()`; use as a context manager."""

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
        _refuse_read_only(path, existed)
        version = schema.inspect_version(path) if existed else 0
        if version and version < schema.SCHEMA_VERSION:
            backups.make_upgrade_backup(path, version)
        if version < schema.SCHEMA_VERSION:
            cls._migrate(path)
        engine = create_engine(f"sqlite+pysqlite:///{path}", connect_args={"timeout": 10})
        event.listen(engine, "connect", _on_connect)
        event.listen(engine, "begin", _on_begin)
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
        event.listen(engine, "begin", _on_begin)
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

    def close(self) -> None:
        self._engine.dispose()
        if self._scratch is not None:  # the private copy a read-only open browsed
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def __enter__(self) -> Store:
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

    def _repair_lab_cards(self) -> None:
        """A passed level without a lab card (a grading killed between its attempt and its card
        by a version that stored them apart) gets its card, as its first pass would have made it
        (graded 4 on that pass's study day, as the v4 upgrade does for older passes)."""
        has_card = select(LabCardRow.exercise).where(
            LabCardRow.exercise == LabAttemptRow.exercise,
            LabCardRow.level == LabAttemptRow.level).exists()
        with self._read() as s:
            missing = s.execute(
                select(LabAttemptRow.exercise, LabAttemptRow.level,
                       func.min(LabAttemptRow.created_ms), func.max(LabAttemptRow.created_ms))
                .where(LabAttemptRow.passed, ~has_card)
                .group_by(LabAttemptRow.exercise, LabAttemptRow.level)).all()
        if not missing:
            return
        cfg = self.settings()
        with self._write() as s:
            for exercise, level, first_ms, last_ms in missing:
                if s.get(LabCardRow, (exercise, level)) is not None:
                    continue  # made meanwhile by another process
                day = self.study_day(from_ms(first_ms), cfg)
                new, _ = transition.apply(
                    transition.Scheduled(CardState.new(), None, 0, False), 4, "review", day, cfg)
                s.add(LabCardRow(
                    exercise=exercise, level=int(level), ef=new.state.ef_hundredths,
                    repetitions=new.state.repetitions, interval=new.state.interval,
                    due=new.due, lapses=new.lapses, leech=new.leech, created_ms=first_ms,
                    last_reviewed_ms=first_ms, last_reviewed_day=day, last_passed_ms=last_ms))
        names = ", ".join(f"{e} L{lv}" for e, lv, _, _ in missing)
        self.warnings.append(
            f"repaired: {names} passed without a lab card (an interrupted grading); "
            "now on the rebuild schedule.")

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """Turn SQLite's low-level failures into StoreErrors that say what to do."""
        try:
            yield
        except DBAPIError as exc:
            orig = exc.orig
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
        _refuse_read_only(self.path, True)
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

    def backup(self) -> Path:
        """Make a rolling backup now (VACUUM INTO) and return its path; keeps the newest N."""
        return backups.make_rolling_backup(self.path, self.settings().backup_keep)

    # ---------------------------------------------------------------------------- settings
    def settings(self) -> Settings:
        """The stored settings. A value that cannot be read (invalid JSON, a wrong type, an
        unknown time zone) falls back to its default, and one warning naming every bad key
        is kept in `settings_problem` (the CLI and the app show it)."""
        with self._read() as s:
            rows = s.execute(select(SettingRow.key, SettingRow.value)).all()
        known = {f.name for f in fields(Settings)}
        stored: dict[str, Any] = {}
        bad: list[str] = []
        hold: tuple[str | None, int, int, int] | None = None
        for key, raw in rows:
            if key == _DAY_HOLD_KEY:
                try:
                    tz, hour, since, until = json.loads(raw)
                    hold = (tz, int(hour), int(since), int(until))
                except (ValueError, TypeError):
                    hold = None
                continue
            if key not in known:
                continue
            try:
                stored[key] = json.loads(raw)
            except ValueError:
                bad.append(f"{key} (not valid JSON: {raw[:40]!r})")
        problems = _setting_problems(stored)
        for key, why in problems.items():
            bad.append(f"{key} ({why})")
            del stored[key]
        self._day_hold = hold
        self.settings_problem = (
            f"settings {', '.join(sorted(bad))} could not be used; using the defaults for "
            f"{'it' if len(bad) == 1 else 'them'}. Fix with `dojo settings KEY=VALUE`."
            if bad else None
        )
        return Settings(**stored)

    settings_problem: str | None = None

    def update_settings(self, now: dt.datetime | None = None, **changes: Any) -> Settings:
        """Validate and store changed settings; returns the new settings. Every bad value is
        named in one ValueError; nothing is stored then.

        Changing the time zone or rollover hour mid-day does not start a new study day early
        (answers given minutes ago stay answered, the new-card allowance stays spent): the
        current day runs on under the old rule until both rules agree on the day."""
        unknown = sorted(set(changes) - {f.name for f in fields(Settings)})
        if unknown:
            raise ValueError(f"unknown setting{'s' if len(unknown) > 1 else ''}: "
                             f"{', '.join(unknown)}")
        current = self.settings()
        new = replace(current, **changes)
        problems = _setting_problems(changes)
        if "backup_keep" not in problems and "leech_lapses" not in problems and (
                new.backup_keep < 1 or new.leech_lapses < 1):
            problems["backup_keep/leech_lapses"] = "must be at least 1"
        if problems:
            raise ValueError("; ".join(f"{k} {why}" for k, why in problems.items()))
        moment = now or utc_now()
        hold = self._hold_until(moment, current, new)
        with self._write() as s:
            for key in changes:
                s.merge(SettingRow(key=key, value=json.dumps(getattr(new, key))))
            if hold is not None:
                s.merge(SettingRow(key=_DAY_HOLD_KEY, value=json.dumps(
                    [current.timezone, current.rollover_hour, to_ms(moment), hold])))
        self._day_hold = None if hold is None else (current.timezone, current.rollover_hour,
                                                    to_ms(moment), hold)
        return new

    def day_rule_held_until(self, now: dt.datetime | None = None) -> dt.datetime | None:
        """While a mid-day time zone/rollover change waits for the day to end: when (UTC)."""
        hold = self._day_hold
        moment = now or utc_now()
        if hold is None or not hold[2] <= to_ms(moment) < hold[3]:
            return None
        return from_ms(hold[3])

    def _hold_until(self, moment: dt.datetime, old: Settings, new: Settings) -> int | None:
        """When a day-rule change would move today's study day, the epoch ms until which the
        old rule keeps applying: the first quarter hour at which both rules name the same day
        (timezone offsets are whole quarter hours, rollovers whole hours)."""
        if (old.timezone, old.rollover_hour) == (new.timezone, new.rollover_hour):
            return None
        old_rule = (old.rollover_hour, resolve_timezone(old.timezone))
        new_rule = (new.rollover_hour, resolve_timezone(new.timezone))
        start = self.study_day(moment, old)  # honours a hold still running
        if study_day(moment, *new_rule) == start:
            return None
        step = dt.timedelta(minutes=15)
        t = moment.astimezone(dt.UTC)
        t = t.replace(minute=t.minute - t.minute % 15, second=0, microsecond=0) + step
        for _ in range(4 * 24 * 3):
            if study_day(t, *new_rule) == study_day(t, *old_rule) >= start:
                return to_ms(t)
            t += step
        return None  # cannot happen for real zones; fall back to switching now

    def study_day(
        self, now: dt.datetime | None = None, settings: Settings | None = None
    ) -> dt.date:
        """The study day `now` (default: the current time) falls in, per the settings (or the
        previous day rule, while a mid-day change waits for the day to end)."""
        cfg = settings or self.settings()
        moment = now or utc_now()
        hold = self._day_hold
        if hold is not None and hold[2] <= to_ms(moment) < hold[3]:
            return study_day(moment, hold[1], resolve_timezone(hold[0]))
        return study_day(moment, cfg.rollover_hour, resolve_timezone(cfg.timezone))

    # ------------------------------------------------- values kept by other modules (plan)
    def stored_value(self, key: str) -> Any:
        """A JSON value another module keeps in the settings table (None when absent)."""
        with self._read() as s:
            raw = s.scalar(select(SettingRow.value).where(SettingRow.key == key))
        try:
            return None if raw is None else json.loads(raw)
        except ValueError:
            return None

    def store_value(self, key: str, value: Any) -> None:
        """Keep (or, with None, remove) a JSON value for another module."""
        if key in {f.name for f in fields(Settings)} or key == _DAY_HOLD_KEY:
            raise ValueError(f"{key!r} is a setting: use update_settings")
        with self._write() as s:
            if value is None:
                s.execute(delete(SettingRow).where(SettingRow.key == key))
            else:
                s.merge(SettingRow(key=key, value=json.dumps(value, sort_keys=True)))

    def plan(self) -> Plan | None:
        """The plan to the interview day (`scheduler.plan`), or None."""
        from scheduler.plan import PLAN_KEY, Plan

        value = self.stored_value(PLAN_KEY)
        return None if value is None else Plan.from_json(value)

    def set_plan(self, plan: Plan | None) -> None:
        from scheduler.plan import PLAN_KEY

        self.store_value(PLAN_KEY, None if plan is None else plan.to_json())

    # ------------------------------------------------------------------------------- cards
    def sync_cards(
        self, questions: Iterable[tuple[str, str]], *, retire_missing: bool = False
    ) -> SyncResult:
        """Create a card for every new (question id, topic), update topics that changed.

        Never-reviewed cards are introduced in the order given, at every sync: a question
        pack added later is interleaved with the remaining new cards (as the bank orders
        it) instead of waiting behind all of them. With `retire_missing`, cards whose
        question is absent are retired (kept with their history, never queued) and come
        back if the question returns. Pass the whole bank.
        """
        wanted: dict[str, str] = {}
        for qid, topic in questions:
            if not isinstance(qid, str) or not qid:
                raise ValueError(f"question id must be a non-empty string, got {qid!r}")
            wanted[qid] = str(topic)
        added = updated = retired = 0
        now_ms = to_ms(utc_now())
        with self._write() as s:
            existing = {
                r.question_id: (r.topic, r.retired)
                for r in s.execute(select(CardRow.question_id, CardRow.topic, CardRow.retired))
            }
            position = s.scalar(select(func.max(CardRow.position)))
            position = -1 if position is None else position
            for qid, topic in wanted.items():
                if qid not in existing:
                    position += 1
                    s.add(CardRow(question_id=qid, topic=topic, position=position, ef=250,
                                  repetitions=0, interval=0, due=None, lapses=0, leech=False,
                                  suspended=False, buried_until=None, retired=False,
                                  created_ms=now_ms))
                    added += 1
                elif existing[qid] != (topic, False):
                    s.execute(update(CardRow).where(CardRow.question_id == qid)
                              .values(topic=topic, retired=False))
                    updated += 1
            s.flush()
            self._resequence_new(s, list(wanted))
            if retire_missing:
                gone = [q for q, (_, was) in existing.items() if q not in wanted and not was]
                for chunk in range(0, len(gone), 500):
                    s.execute(update(CardRow).where(
                        CardRow.question_id.in_(gone[chunk:chunk + 500])).values(retired=True))
                retired = len(gone)
        return SyncResult(added, updated, retired)

    @staticmethod
    def _resequence_new(s: Session, order: list[str]) -> None:
        """Give the never-reviewed cards among `order` their positions in that order (the
        same set of positions, permuted, so reviewed and retired cards keep theirs)."""
        rank = {qid: i for i, qid in enumerate(order)}
        rows = [(qid, pos) for qid, pos in s.execute(
            select(CardRow.question_id, CardRow.position).where(CardRow.due.is_(None))
        ) if qid in rank]
        slots = sorted(pos for _, pos in rows)
        wanted = sorted(rows, key=lambda r: rank[r[0]])
        changes = [{"question_id": qid, "position": slot}
                   for (qid, pos), slot in zip(wanted, slots, strict=True) if pos != slot]
        if changes:
            s.execute(update(CardRow), changes)

    def card(self, question_id: str) -> Card:
        """The card for a question id; UnknownCardError if there is none."""
        with self._read() as s:
            return _card(self._get(s, question_id))

    def cards(self) -> list[Card]:
        """Every card, in new-card order."""
        with self._read() as s:
            return [_card(r) for r in s.scalars(select(CardRow).order_by(CardRow.position))]

    @staticmethod
    def _get(s: Session, question_id: str) -> CardRow:
        row = s.get(CardRow, question_id)
        if row is None:
            raise UnknownCardError(f"no card for question id {question_id!r}")
        return row

    def suspend(self, question_id: str) -> None:
        """Take a card out of every queue until unsuspended."""
        self._set(question_id, suspended=True)

    def unsuspend(self, question_id: str) -> None:
        self._set(question_id, suspended=False)

    def bury(self, question_id: str, now: dt.datetime | None = None) -> None:
        """Hide a card for the rest of today's study day."""
        self._set(question_id, buried_until=self.study_day(now))

    def unbury(self, question_id: str) -> None:
        self._set(question_id, buried_until=None)

    def _set(self, question_id: str, **values: Any) -> None:
        with self._write() as s:
            self._get(s, question_id)
            s.execute(update(CardRow).where(CardRow.question_id == question_id).values(**values))

    def flag(self, question_id: str, note: str, now: dt.datetime | None = None) -> int:
        """Record that a question looks wrong (kept for the author); returns the flag id."""
        if not isinstance(note, str) or not note.strip():
            raise ValueError("a flag needs a note saying what looks wrong")
        with self._write() as s:
            self._get(s, question_id)
            row = FlagRow(question_id=question_id, note=note.strip(),
                          created_ms=to_ms(now or utc_now()))
            s.add(row)
            s.flush()
            return row.id

    def flags(self, question_id: str | None = None) -> list[Flag]:
        query = select(FlagRow).order_by(FlagRow.id)
        if question_id is not None:
            query = query.where(FlagRow.question_id == question_id)
        with self._read() as s:
            return [Flag(r.id, r.question_id, r.note, from_ms(r.created_ms))
                    for r in s.scalars(query)]

    def clear_flags(self, question_id: str) -> int:
        with self._write() as s:
            ids = list(s.scalars(select(FlagRow.id).where(FlagRow.question_id == question_id)))
            s.execute(delete(FlagRow).where(FlagRow.id.in_(ids)))
            return len(ids)

    # ------------------------------------------------------------------------------- queue
    def today_queue(
        self,
        now: dt.datetime | None = None,
        new_limit: int | None = None,
        review_limit: int | None = None,
    ) -> Queue:
        """Today's queue: due reviews oldest first, then new cards, then re-drill.

        New cards fill up to the daily new limit (less those already introduced today), and
        reviews plus new cards stay within the daily review limit (less answers already
        given today). Re-drill lists cards whose latest graded answer today is below 4.
        Suspended, buried and retired cards never appear. Limits default to the settings.
        """
        cfg = self.settings()
        day = self.study_day(now, cfg)
        new_cap = cfg.new_limit if new_limit is None else new_limit
        plan = self.plan() if new_limit is None else None
        review_cap = cfg.review_limit if review_limit is None else review_limit
        visible = (
            ~CardRow.suspended,
            ~CardRow.retired,
            (CardRow.buried_until.is_(None)) | (CardRow.buried_until < day),
        )
        with self._read() as s:
            today = s.execute(
                select(ReviewRow.question_id, ReviewRow.mode, ReviewRow.quality,
                       ReviewRow.due_before)
                .where(ReviewRow.study_day == day).order_by(ReviewRow.id)
            ).all()
            scheduled = [r for r in today if r.mode == "review"]
            introduced = sum(1 for r in scheduled if r.due_before is None)
            if plan is not None:  # a plan to the interview replaces the new-card limit
                from scheduler.plan import paced_new_limit

                waiting = s.scalar(select(func.count()).select_from(CardRow).where(
                    CardRow.due.is_(None), ~CardRow.suspended, ~CardRow.retired)) or 0
                paced = paced_new_limit(plan, day, waiting + introduced)
                new_cap = new_cap if paced is None else paced
            room = max(0, review_cap - len(scheduled))
            due_rows = s.execute(
                select(CardRow.question_id, CardRow.topic, CardRow.due)
                .where(CardRow.due <= day, *visible)
                .order_by(CardRow.due, CardRow.position).limit(room)
            ).all()
            new_room = min(max(0, new_cap - introduced), room - len(due_rows))
            new_rows = s.execute(
                select(CardRow.question_id, CardRow.topic)
                .where(CardRow.due.is_(None), *visible)
                .order_by(CardRow.position).limit(new_room)
            ).all() if new_room > 0 else []
            latest: dict[str, int] = {}
            for r in today:
                if r.mode != "cram":
                    latest.pop(r.question_id, None)  # keep the order of the latest answer
                    latest[r.question_id] = r.quality
            failing = [q for q, quality in latest.items() if transition.needs_redrill(quality)]
            due_ids = {r.question_id for r in due_rows}
            lab_items = self._lab_recall_items(
                s, day, due_ids | {r.question_id for r in new_rows}, visible)
            redrill_rows: dict[str, str] = {}
            for chunk in range(0, len(failing), 500):
                redrill_rows.update(s.execute(
                    select(CardRow.question_id, CardRow.topic)
                    .where(CardRow.question_id.in_(failing[chunk:chunk + 500]), *visible)
                ).all())
        return Queue(
            day=day,
            reviews=tuple(QueueItem(r.question_id, r.topic, "review", r.due) for r in due_rows),
            new=tuple(QueueItem(r.question_id, r.topic, "new", None) for r in new_rows),
            redrill=tuple(
                QueueItem(q, redrill_rows[q], "redrill", None)
                for q in failing if q in redrill_rows and q not in due_ids
                and q not in {i.question_id for i in lab_items}
            ),
            lab=lab_items,
        )

    @staticmethod
    def _lab_recall_items(s: Session, day: dt.date, due_ids: set[str],
                          visible: tuple[Any, ...]) -> tuple[QueueItem, ...]:
        """Questions a failed lab case brought back today and not answered since (any mode),
        unless already in the queue as a review or a new card."""
        rows = s.execute(
            select(LabRecallRow, CardRow.topic)
            .join(CardRow, CardRow.question_id == LabRecallRow.question_id)
            .where(LabRecallRow.study_day == day, *visible)
            .order_by(LabRecallRow.created_ms, LabRecallRow.question_id)
        ).all()
        if not rows:
            return ()
        answered_after = {
            qid: ms for qid, ms in s.execute(
                select(ReviewRow.question_id, func.max(ReviewRow.reviewed_ms))
                .where(ReviewRow.study_day == day).group_by(ReviewRow.question_id)).all()}
        return tuple(
            QueueItem(r.question_id, topic, "lab", None, exercise=r.exercise, level=r.level,
                      case=r.case_id)
            for r, topic in rows
            if r.question_id not in due_ids
            and answered_after.get(r.question_id, -1) < r.created_ms
        )

    def add_lab_recalls(self, items: Iterable[tuple[str, str, int, str]],
                        now: dt.datetime | None = None) -> list[str]:
        """Bring (question, exercise, level, case) back into today's queue, once per question
        per study day; returns the questions added now. A question without a card (not in the
        bank) is skipped. The card itself is not changed."""
        moment = now or utc_now()
        day = self.study_day(moment)
        added: list[str] = []
        with self._write() as s:
            for qid, exercise, level, case_id in items:
                if qid in added or s.get(CardRow, qid) is None:
                    continue
                if s.get(LabRecallRow, (qid, day)) is not None:
                    continue
                s.add(LabRecallRow(question_id=qid, study_day=day, exercise=exercise,
                                   level=int(level), case_id=case_id, created_ms=to_ms(moment)))
                added.append(qid)
        return added

    # ------------------------------------------------------------------------------ answer
    def answer(
        self,
        question_id: str,
        quality: int,
        *,
        correct: bool,
        answer_text: str,
        response_ms: int,
        params: dict[str, Any] | None = None,
        now: dt.datetime | None = None,
        mode: Mode = "review",
        mistake_id: str | None = None,
        overridden: bool = False,
    ) -> ReviewResult:
        """Record one answer: the card update and its log row commit in one transaction.

        `mode="review"` applies SM-2 to a card that is due (or new) today; a failing grade
        (< 3) is a lapse, and the card becomes a leech at the configured number of lapses.
        `"redrill"` (today's re-drill) and `"cram"` (practice outside the schedule) are
        logged but leave the schedule untouched. `mistake_id` names the mistake a wrong
        answer matched (kept for "recurring mistakes"); `overridden` marks a wrong verdict the
        learner counted right after a typo. Raises ValueError for a bad grade, mode or a
        review of a card not due today, UnknownCardError for an unknown question id.
        """
        quality = check_quality(quality)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if isinstance(response_ms, bool) or not isinstance(response_ms, int) or response_ms < 0:
            raise ValueError(f"response_ms must be a whole number >= 0, got {response_ms!r}")
        params_json = _json_object(params, "params")
        if mistake_id is not None and (not isinstance(mistake_id, str) or not mistake_id):
            raise ValueError(f"mistake_id must be a non-empty string or None, got {mistake_id!r}")
        moment = now or utc_now()
        cfg = self.settings()
        day = self.study_day(moment, cfg)
        with self._write() as s:
            card = self._get(s, question_id)
            old = _card(card).scheduled
            try:
                new, redrill = transition.apply(old, quality, mode, day, cfg)
                if cfg.scheduler == "fsrs" and mode == "review":  # FSRS sets the due day
                    new = self._fsrs_due(s, question_id, new, quality, moment, day)
            except ValueError as exc:
                if mode == "review" and card.due is not None and card.due > day and s.scalars(
                    select(ReviewRow.id).where(ReviewRow.question_id == question_id,
                                               ReviewRow.study_day == day,
                                               ReviewRow.mode == "review").limit(1)
                ).first() is not None:
                    raise AnsweredElsewhereError(
                        f"{question_id} was already answered today (in another window?) and "
                        f"is not due until {card.due.isoformat()}; this answer was not recorded"
                    ) from None
                raise ValueError(f"{question_id}: {exc}") from None
            before, after = old.state, new.state
            snapshot = (card.due, card.lapses, card.leech, card.last_reviewed_ms)
            due, lapses, leech = new.due, new.lapses, new.leech
            if new != old:
                card.ef, card.repetitions, card.interval = (
                    after.ef_hundredths, after.repetitions, after.interval)
                card.due, card.lapses, card.leech = due, lapses, leech
                card.last_reviewed_ms = to_ms(moment)
            row = ReviewRow(
                uid=uuid.uuid4().hex, question_id=question_id, reviewed_ms=to_ms(moment),
                study_day=day, mode=mode, quality=quality, correct=bool(correct),
                answer_text=str(answer_text), response_ms=response_ms, params=params_json,
                ef_before=before.ef_hundredths, reps_before=before.repetitions,
                interval_before=before.interval, due_before=snapshot[0],
                lapses_before=snapshot[1], leech_before=snapshot[2],
                last_reviewed_ms_before=snapshot[3],
                ef_after=after.ef_hundredths, reps_after=after.repetitions,
                interval_after=after.interval, due_after=due, lapses_after=lapses,
                leech_after=leech, mistake_id=mistake_id, overridden=bool(overridden),
            )
            s.add(row)
            s.flush()
            self._inside_answer_transaction()
        return ReviewResult(
            review_id=row.id, question_id=question_id, mode=mode, quality=quality,
            correct=bool(correct), day=day, before=before, after=after, due=due,
            lapses=lapses, leech=leech, became_leech=leech and not snapshot[2],
            needs_redrill=redrill,
        )

    def _fsrs_due(self, s: Session, question_id: str, new: transition.Scheduled,
                  quality: int, moment: dt.datetime, day: dt.date) -> transition.Scheduled:
        """`new` with its interval and due day from an FSRS replay of the card's answers."""
        from scheduler.fsrs_schedule import fsrs_interval
        from scheduler.readiness import FSRS_PARAMETERS_KEY

        answers = [(from_ms(ms), q) for ms, q in s.execute(
            select(ReviewRow.reviewed_ms, ReviewRow.quality)
            .where(ReviewRow.question_id == question_id).order_by(ReviewRow.id)).all()]
        raw = s.scalar(select(SettingRow.value).where(SettingRow.key == FSRS_PARAMETERS_KEY))
        interval = fsrs_interval([*answers, (moment, quality)],
                                 None if raw is None else json.loads(raw))
        state = CardState(new.state.ef_hundredths, new.state.repetitions, interval)
        return replace(new, state=state, due=day + dt.timedelta(days=interval))

    def _inside_answer_transaction(self) -> None:
        """Test seam: runs after the answer is written, before it commits."""

    def undo(
        self, now: dt.datetime | None = None, review_id: int | None = None
    ) -> UndoResult | None:
        """Undo the latest answer of today's study day; call again to undo further.

        With `review_id` (what `answer` returned), undo exactly that answer whatever the day,
        as a session does after the rollover hour passes mid-session, provided it is still
        its card's latest answer. Restores the card's schedule exactly as it was and deletes
        the log row. Returns None when there is nothing (left) to undo.
        """
        with self._write() as s:
            if review_id is None:
                row = s.scalars(
                    select(ReviewRow).where(ReviewRow.study_day == self.study_day(now))
                    .order_by(ReviewRow.id.desc()).limit(1)
                ).first()
            else:
                row = s.get(ReviewRow, review_id)
                if row is not None and s.scalars(
                    select(ReviewRow.id).where(ReviewRow.question_id == row.question_id,
                                               ReviewRow.id > row.id).limit(1)
                ).first() is not None:
                    return None  # answered again since (another process): would lose that
            if row is None:
                return None
            card = self._get(s, row.question_id)
            card.ef, card.repetitions, card.interval = (
                row.ef_before, row.reps_before, row.interval_before)
            card.due, card.lapses, card.leech = row.due_before, row.lapses_before, row.leech_before
            card.last_reviewed_ms = row.last_reviewed_ms_before
            result = UndoResult(row.id, row.question_id, row.mode,  # type: ignore[arg-type]
                                row.quality, _card(card))
            s.delete(row)
        return result

    def history(self, question_id: str) -> list[Review]:
        """Every logged answer for a question, oldest first."""
        with self._read() as s:
            self._get(s, question_id)
            return [_review(r) for r in s.scalars(
                select(ReviewRow).where(ReviewRow.question_id == question_id)
                .order_by(ReviewRow.id))]

    # ------------------------------------------------------------------------------- stats
    def reviews_per_day(
        self, days: int = 365, now: dt.datetime | None = None
    ) -> dict[dt.date, int]:
        """Answers (all modes) per study day over the last `days` days, oldest first (zeros
        included), for a heatmap."""
        today = self.study_day(now)
        start = today - dt.timedelta(days=days - 1)
        with self._read() as s:
            counts = dict(s.execute(
                select(ReviewRow.study_day, func.count())
                .where(ReviewRow.study_day >= start, ReviewRow.study_day <= today)
                .group_by(ReviewRow.study_day)
            ).all())
        return {start + dt.timedelta(days=i): counts.get(start + dt.timedelta(days=i), 0)
                for i in range(days)}

    def streak(self, now: dt.datetime | None = None) -> int:
        """Consecutive study days with at least one answer, ending today (or yesterday, so an
        unfinished today does not break it)."""
        today = self.study_day(now)
        with self._read() as s:
            days = s.scalars(
                select(ReviewRow.study_day).where(ReviewRow.study_day <= today).distinct()
                .order_by(ReviewRow.study_day.desc())
            )
            expected = today
            count = 0
            for d in days:
                if d == expected:
                    count += 1
                elif count == 0 and d == today - dt.timedelta(days=1):
                    count, expected = 1, d
                else:
                    break
                expected = d - dt.timedelta(days=1)
        return count

    def true_retention(self, days: int = 30, now: dt.datetime | None = None) -> Retention:
        """Share of passes (grade >= 3) on mature cards (interval >= 21 d before the answer),
        counting only the day's first answer, i.e. the scheduled review, over `days` days."""
        today = self.study_day(now)
        start = today - dt.timedelta(days=days - 1)
        with self._read() as s:
            total, passed = s.execute(
                select(func.count(), _count_where(ReviewRow.quality >= 3))
                .where(ReviewRow.mode == "review", ReviewRow.interval_before >= MATURE_DAYS,
                       ReviewRow.study_day >= start, ReviewRow.study_day <= today)
            ).one()
        return Retention(passed=int(passed), total=int(total))

    def retention_by_week(
        self, weeks: int = 12, now: dt.datetime | None = None
    ) -> list[tuple[dt.date, Retention]]:
        """True retention per 7-day window, oldest first, the last window ending today: how
        retention moves over time (same counting rule as `true_retention`)."""
        today = self.study_day(now)
        start = today - dt.timedelta(days=7 * weeks - 1)
        with self._read() as s:
            rows = s.execute(
                select(ReviewRow.study_day, func.count(),
                       _count_where(ReviewRow.quality >= 3))
                .where(ReviewRow.mode == "review", ReviewRow.interval_before >= MATURE_DAYS,
                       ReviewRow.study_day >= start, ReviewRow.study_day <= today)
                .group_by(ReviewRow.study_day)
            ).all()
        buckets = [[0, 0] for _ in range(weeks)]
        for day, total, passed in rows:
            index = (day - start).days // 7
            buckets[index][0] += int(passed)
            buckets[index][1] += int(total)
        return [
            (start + dt.timedelta(days=7 * i), Retention(passed=p, total=t))
            for i, (p, t) in enumerate(buckets)
        ]

    def topic_accuracy(self) -> dict[str, TopicAccuracy]:
        """Per topic: scheduled answers, how many were correct, and how many of those were
        wrong verdicts counted right after a typo (re-drill/cram excluded)."""
        with self._read() as s:
            rows = s.execute(
                select(CardRow.topic, func.count(), _count_where(ReviewRow.correct),
                       _count_where(ReviewRow.overridden))
                .join(CardRow, CardRow.question_id == ReviewRow.question_id)
                .where(ReviewRow.mode == "review").group_by(CardRow.topic)
                .order_by(CardRow.topic)
            ).all()
        return {t: TopicAccuracy(t, int(n), int(c), int(o)) for t, n, c, o in rows}

    def overrides(self, days: int = 30, now: dt.datetime | None = None) -> int:
        """Answers (all modes) over the last `days` days that the learner counted right after
        a typo: reported beside accuracy so overrides cannot hide real misses."""
        today = self.study_day(now)
        start = today - dt.timedelta(days=days - 1)
        with self._read() as s:
            return int(s.scalar(
                select(func.count()).where(ReviewRow.overridden, ReviewRow.study_day >= start,
                                           ReviewRow.study_day <= today)
            ) or 0)

    def recurring_mistakes(
        self, days: int = 30, now: dt.datetime | None = None, limit: int = 10
    ) -> list[MistakeCount]:
        """The named mistakes (and MCQ distractors) answered most over the last `days` days,
        most frequent first (ties: most recent first), overridden answers excluded."""
        today = self.study_day(now)
        start = today - dt.timedelta(days=days - 1)
        with self._read() as s:
            rows = s.execute(
                select(ReviewRow.question_id, CardRow.topic, ReviewRow.mistake_id,
                       func.count(), func.max(ReviewRow.study_day))
                .join(CardRow, CardRow.question_id == ReviewRow.question_id)
                .where(ReviewRow.mistake_id.is_not(None), ~ReviewRow.overridden,
                       ReviewRow.study_day >= start, ReviewRow.study_day <= today)
                .group_by(ReviewRow.question_id, ReviewRow.mistake_id)
                .order_by(func.count().desc(), func.max(ReviewRow.id).desc())
                .limit(limit)
            ).all()
        return [MistakeCount(q, t, str(m), int(n), last) for q, t, m, n, last in rows]

    def forecast(self, days: int = 30, now: dt.datetime | None = None) -> dict[dt.date, int]:
        """Due reviews per day for the next `days` days (overdue cards count on today)."""
        today = self.study_day(now)
        end = today + dt.timedelta(days=days - 1)
        with self._read() as s:
            rows = s.execute(
                select(CardRow.due, func.count())
                .where(CardRow.due.is_not(None), CardRow.due <= end, ~CardRow.suspended,
                       ~CardRow.retired)
                .group_by(CardRow.due)
            ).all()
        out = {today + dt.timedelta(days=i): 0 for i in range(days)}
        for due, n in rows:
            if due is not None:
                out[max(due, today)] += n
        return out

    def ef_distribution(self) -> dict[Decimal, int]:
        """Number of reviewed cards at each EF, lowest EF first."""
        with self._read() as s:
            rows = s.execute(
                select(CardRow.ef, func.count()).where(CardRow.due.is_not(None), ~CardRow.retired)
                .group_by(CardRow.ef).order_by(CardRow.ef)
            ).all()
        return {CardState(ef).ef: n for ef, n in rows}

    def interval_distribution(self) -> dict[str, int]:
        """Number of reviewed cards per interval bucket (1d, 2-6d, ..., 180d+)."""
        with self._read() as s:
            rows = s.execute(
                select(CardRow.interval, func.count())
                .where(CardRow.due.is_not(None), ~CardRow.retired).group_by(CardRow.interval)
            ).all()
        out = {label: 0 for label, _, _ in INTERVAL_BUCKETS}
        for interval, n in rows:
            for label, low, high in INTERVAL_BUCKETS:
                if interval >= low and (high is None or interval <= high):
                    out[label] += n
        return out

    # ----------------------------------------------------------------------- lab workspace
    def lab_state(self, exercise: str) -> dict[str, Any] | None:
        """What the app remembers about an exercise's workspace (which folder, hints shown,
        the interview clock), or None when nothing is stored yet. Kept here, not in a file in
        the workspace: the learner's code may write its workspace, never this database."""
        with self._read() as s:
            raw = s.scalar(select(SettingRow.value).where(
                SettingRow.key == _LAB_STATE_KEY + exercise))
        if raw is None:
            return None
        try:
            data = json.loads(raw)
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def set_lab_state(self, exercise: str, state: dict[str, Any]) -> None:
        """Replace an exercise's remembered workspace state (see `lab_state`)."""
        value = _json_object(state, "lab state") or "{}"
        with self._write() as s:
            s.merge(SettingRow(key=_LAB_STATE_KEY + exercise, value=value))

    # -------------------------------------------------------------------------- lab attempts
    def record_lab_attempt(
        self,
        exercise: str,
        level: int,
        device: str,
        passed: bool,
        cases: list[dict[str, Any]],
        metrics: dict[str, Any],
        duration_s: float,
        now: dt.datetime | None = None,
    ) -> int:
        """Store one graded lab run (per-case results and metrics as JSON); returns its id."""
        if not isinstance(exercise, str) or not exercise:
            raise ValueError("exercise must be a non-empty string")
        if isinstance(level, bool) or not isinstance(level, int):
            raise ValueError(f"level must be an int, got {level!r}")
        if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
            raise ValueError("cases must be a list of dicts")
        try:
            cases_json = json.dumps(cases, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"cases must be JSON-serialisable: {exc}") from exc
        metrics_json = _json_object(metrics, "metrics")
        with self._write() as s:
            row = LabAttemptRow(
                uid=uuid.uuid4().hex, exercise=exercise, level=level, device=str(device),
                passed=bool(passed), cases=cases_json, metrics=metrics_json or "{}",
                duration_s=float(duration_s), created_ms=to_ms(now or utc_now()),
            )
            s.add(row)
            s.flush()
            return row.id

    def lab_attempts(self, exercise: str | None = None) -> list[LabAttempt]:
        """Recorded lab attempts, oldest first, optionally for one exercise."""
        query = select(LabAttemptRow).order_by(LabAttemptRow.id)
        if exercise is not None:
            query = query.where(LabAttemptRow.exercise == exercise)
        with self._read() as s:
            return [_lab_attempt(r) for r in s.scalars(query)]

    # ----------------------------------------------------------------------------- lab cards
    def grade_lab_card(
        self,
        exercise: str,
        level: int,
        quality: int,
        *,
        passed: bool,
        rebuild: bool,
        pass_s: float | None = None,
        gradings: int | None = None,
        now: dt.datetime | None = None,
    ) -> LabCardResult:
        """Apply a lab level's pass (or an abandoned rebuild, `passed=False`) to its card.

        The level's first pass creates the card, and is its first review (graded `quality` by
        the same `transition.apply` as a question). After that only a rebuild (`rebuild=True`)
        grades the card, and only once a study day and not before it is due: any other pass
        just updates "last passed" (`pass_s`: time to pass when timed; `gradings` needed).
        """
        quality = check_quality(quality)
        if isinstance(level, bool) or not isinstance(level, int):
            raise ValueError(f"level must be an int, got {level!r}")
        moment = now or utc_now()
        cfg = self.settings()
        day = self.study_day(moment, cfg)
        created = graded = False
        why = ""
        with self._write() as s:
            row = s.get(LabCardRow, (exercise, level))
            if row is None:
                if not passed:
                    return LabCardResult(None, False, False, quality,
                                         f"{exercise} L{level} was never passed: no card yet")
                row = LabCardRow(exercise=exercise, level=level, ef=CardState.new().ef_hundredths,
                                 repetitions=0, interval=0, due=None, lapses=0, leech=False,
                                 created_ms=to_ms(moment))
                s.add(row)
                created = True
            if passed:
                row.last_passed_ms = to_ms(moment)
                row.last_pass_s = None if pass_s is None else round(float(pass_s), 1)
                row.last_pass_gradings = gradings
            if not created and not rebuild:
                why = "a pass outside a rebuild leaves the schedule as it was"
            elif not created and row.last_reviewed_day == day:
                why = "already graded today"
            elif not created and row.due is not None and row.due > day:
                why = f"not due until {row.due.isoformat()}: practice, the schedule is unchanged"
            else:
                old = transition.Scheduled(CardState(row.ef, row.repetitions, row.interval),
                                           row.due, row.lapses, row.leech)
                new, _ = transition.apply(old, quality, "review", day, cfg)
                row.ef, row.repetitions, row.interval = (
                    new.state.ef_hundredths, new.state.repetitions, new.state.interval)
                row.due, row.lapses, row.leech = new.due, new.lapses, new.leech
                row.last_reviewed_ms, row.last_reviewed_day = to_ms(moment), day
                graded = True
            s.flush()
            card = _lab_card(row)
        return LabCardResult(card, created, graded, quality, why)

    def lab_levels_passed(self) -> set[tuple[str, int]]:
        """(exercise, level) of every level with a passing attempt."""
        with self._read() as s:
            return {(e, int(lv)) for e, lv in s.execute(
                select(LabAttemptRow.exercise, LabAttemptRow.level)
                .where(LabAttemptRow.passed).distinct()).all()}

    def lab_cards(self) -> list[LabCard]:
        """Every lab card, by exercise and level."""
        with self._read() as s:
            return [_lab_card(r) for r in s.scalars(
                select(LabCardRow).order_by(LabCardRow.exercise, LabCardRow.level))]

    def lab_card(self, exercise: str, level: int) -> LabCard | None:
        with self._read() as s:
            row = s.get(LabCardRow, (exercise, level))
            return None if row is None else _lab_card(row)

    def due_lab_cards(self, now: dt.datetime | None = None) -> list[LabCard]:
        """Lab cards due by today's study day, most overdue first: the levels to rebuild."""
        day = self.study_day(now)
        with self._read() as s:
            return [_lab_card(r) for r in s.scalars(
                select(LabCardRow).where(LabCardRow.due <= day)
                .order_by(LabCardRow.due, LabCardRow.exercise, LabCardRow.level))]

    # ----------------------------------------------------------------------- export/import
    # ----------------------------------------------------------------------- mock rounds
    def save_mock_round(self, state: dict[str, Any], *, round_id: int | None = None,
                        started: dt.datetime, minutes: int, finished: dt.datetime | None = None,
                        score: float | None = None) -> int:
        """Insert (round_id None) or update one mock round with its whole state; returns its
        id. Saved after every answer, so closing the app loses nothing."""
        state_json = _json_object(state, "state") or "{}"
        with self._write() as s:
            row = s.get(MockRoundRow, round_id) if round_id is not None else None
            if row is None:
                row = MockRoundRow(started_ms=to_ms(started), minutes=int(minutes),
                                   state=state_json)
                s.add(row)
            row.state = state_json
            row.finished_ms = to_ms(finished) if finished is not None else None
            row.score = None if score is None else float(score)
            s.flush()
            return row.id

    def open_mock_round(self) -> tuple[int, dict[str, Any]] | None:
        """The latest round not finished yet (id, state), to resume."""
        with self._read() as s:
            row = s.execute(select(MockRoundRow).where(MockRoundRow.finished_ms.is_(None))
                            .order_by(MockRoundRow.id.desc()).limit(1)).scalar_one_or_none()
            return None if row is None else (row.id, json.loads(row.state))

    def mock_rounds(self) -> list[tuple[int, dt.datetime, float, dict[str, Any]]]:
        """Finished rounds, oldest first: (id, finished at, score 0..1, state)."""
        with self._read() as s:
            rows = s.execute(select(MockRoundRow).where(MockRoundRow.finished_ms.is_not(None))
                             .order_by(MockRoundRow.id)).scalars().all()
            return [(r.id, from_ms(r.finished_ms or 0), float(r.score or 0.0),
                     json.loads(r.state)) for r in rows]

    def export_history(self) -> dict[str, Any]:
        """The whole review history (cards, answer log, lab attempts) as a JSON-ready dict."""
        from scheduler.history import export_history

        with self._read() as s:
            return export_history(s)

    def import_history(self, data: dict[str, Any]) -> ImportSummary:
        """Merge an exported history; validated first, all-or-nothing, idempotent."""
        from scheduler.history import import_history, validate

        document = validate(data)
        with self._write() as s:
            return import_history(s, document)


SCHEDULERS = ("sm2", "fsrs")
_LAB_STATE_KEY = "lab_state:"  # + exercise id: Store.lab_state, in the settings table
_DAY_HOLD_KEY = "_day_rule_hold"  # [old timezone, old rollover_hour, from ms, until ms]


def _setting_problems(values: dict[str, Any]) -> dict[str, str]:
    """What is wrong with each given setting value (key -> why), for every key at once."""
    problems: dict[str, str] = {}
    for name in ("new_limit", "review_limit", "backup_keep", "leech_lapses"):
        if name in values:
            value = values[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                problems[name] = f"must be a whole number >= 0, got {value!r}"
    if "scheduler" in values and values["scheduler"] not in SCHEDULERS:
        problems["scheduler"] = (f"must be one of {', '.join(SCHEDULERS)}, got "
                                 f"{values['scheduler']!r}")
    if "rollover_hour" in values:
        hour = values["rollover_hour"]
        if isinstance(hour, bool) or not isinstance(hour, int) or not 0 <= hour <= 23:
            problems["rollover_hour"] = f"must be an hour 0-23, got {hour!r}"
    if "timezone" in values:
        tz = values["timezone"]
        if tz is not None and not isinstance(tz, str):
            problems["timezone"] = f"must be an IANA name, got {tz!r}"
        else:
            try:
                resolve_timezone(tz)
            except ValueError as exc:
                problems["timezone"] = str(exc)
    return problems


def _refuse_read_only(path: Path, existed: bool) -> None:
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


__all__ = ["Store", "StoreError"]
