"""Schema versions (PRAGMA user_version), the refusal checks and the ordered upgrade steps.

A database is inspected read-only before anything writes to it, so a corrupted file or one
from a newer app is refused untouched. Older files get a backup copy, then every upgrade step
in one transaction. Step DDL is frozen history: never edit a step, add a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from scheduler.errors import CorruptDatabaseError, NewerDatabaseError

SCHEMA_VERSION = 7

# Version 1: the scheduler's own tables, as first released.
V1_DDL = (
    """CREATE TABLE cards (
	question_id VARCHAR NOT NULL, topic VARCHAR NOT NULL, position INTEGER NOT NULL,
	ef INTEGER NOT NULL, repetitions INTEGER NOT NULL, interval INTEGER NOT NULL, due DATE,
	lapses INTEGER NOT NULL, leech BOOLEAN NOT NULL, suspended BOOLEAN NOT NULL,
	buried_until DATE, retired BOOLEAN NOT NULL, created_ms INTEGER NOT NULL,
	last_reviewed_ms INTEGER, PRIMARY KEY (question_id))""",
    "CREATE INDEX ix_cards_position ON cards (position)",
    "CREATE INDEX ix_cards_due ON cards (due)",
    """CREATE TABLE settings ("key" VARCHAR NOT NULL, value TEXT NOT NULL, PRIMARY KEY ("key"))""",
    """CREATE TABLE flags (
	id INTEGER NOT NULL, question_id VARCHAR NOT NULL, note TEXT NOT NULL,
	created_ms INTEGER NOT NULL, PRIMARY KEY (id),
	FOREIGN KEY(question_id) REFERENCES cards (question_id))""",
    "CREATE INDEX ix_flags_question ON flags (question_id)",
    """CREATE TABLE reviews (
	id INTEGER NOT NULL, uid VARCHAR NOT NULL, question_id VARCHAR NOT NULL,
	reviewed_ms INTEGER NOT NULL, study_day DATE NOT NULL, mode VARCHAR NOT NULL,
	quality INTEGER NOT NULL, correct BOOLEAN NOT NULL, answer_text TEXT NOT NULL,
	response_ms INTEGER NOT NULL, params TEXT, ef_before INTEGER NOT NULL,
	reps_before INTEGER NOT NULL, interval_before INTEGER NOT NULL, due_before DATE,
	lapses_before INTEGER NOT NULL, leech_before BOOLEAN NOT NULL,
	last_reviewed_ms_before INTEGER, ef_after INTEGER NOT NULL, reps_after INTEGER NOT NULL,
	interval_after INTEGER NOT NULL, due_after DATE, lapses_after INTEGER NOT NULL,
	leech_after BOOLEAN NOT NULL, PRIMARY KEY (id), UNIQUE (uid),
	FOREIGN KEY(question_id) REFERENCES cards (question_id))""",
    "CREATE INDEX ix_reviews_day ON reviews (study_day)",
    "CREATE INDEX ix_reviews_question ON reviews (question_id, id)",
)


def _v1_to_v2(conn: sqlite3.Connection) -> None:
    """Version 2: graded lab attempts get their own table."""
    conn.execute(
        """CREATE TABLE lab_attempts (
	id INTEGER NOT NULL, uid VARCHAR NOT NULL, exercise VARCHAR NOT NULL,
	level INTEGER NOT NULL, device VARCHAR NOT NULL, passed BOOLEAN NOT NULL,
	cases TEXT NOT NULL, metrics TEXT NOT NULL, duration_s DOUBLE NOT NULL,
	created_ms INTEGER NOT NULL, PRIMARY KEY (id), UNIQUE (uid))"""
    )
    conn.execute("CREATE INDEX ix_lab_attempts_exercise ON lab_attempts (exercise, id)")


def _v2_to_v3(conn: sqlite3.Connection) -> None:
    """Version 3: an answer records the named mistake it matched and a typo override."""
    conn.execute("ALTER TABLE reviews ADD COLUMN mistake_id VARCHAR")
    conn.execute("ALTER TABLE reviews ADD COLUMN overridden BOOLEAN DEFAULT 0 NOT NULL")


def _v3_to_v4(conn: sqlite3.Connection) -> None:
    """Version 4: a passed lab level becomes a card on the SM-2 schedule (`lab_cards`)."""
    conn.execute(
        """CREATE TABLE lab_cards (
	exercise VARCHAR NOT NULL, level INTEGER NOT NULL, ef INTEGER NOT NULL,
	repetitions INTEGER NOT NULL, interval INTEGER NOT NULL, due DATE,
	lapses INTEGER NOT NULL, leech BOOLEAN NOT NULL, created_ms INTEGER NOT NULL,
	last_reviewed_ms INTEGER, last_reviewed_day DATE, last_passed_ms INTEGER,
	last_pass_s DOUBLE, last_pass_gradings INTEGER, PRIMARY KEY (exercise, level))"""
    )
    conn.execute("CREATE INDEX ix_lab_cards_due ON lab_cards (due)")
    # Levels passed before lab cards existed become cards too, as if the first pass had been
    # graded 4 on its UTC day (EF 2.50, n 1, due the next day): they come back for a rebuild.
    conn.execute(
        """INSERT INTO lab_cards (exercise, level, ef, repetitions, interval, due, lapses, leech,
	created_ms, last_reviewed_ms, last_reviewed_day, last_passed_ms)
	SELECT exercise, level, 250, 1, 1, date(MIN(created_ms) / 1000, 'unixepoch', '+1 day'),
	0, 0, MIN(created_ms), MIN(created_ms), date(MIN(created_ms) / 1000, 'unixepoch'),
	MAX(created_ms) FROM lab_attempts WHERE passed GROUP BY exercise, level"""
    )


def _v4_to_v5(conn: sqlite3.Connection) -> None:
    """Version 5: mock interview rounds (`dojo mock`), each with its state as JSON."""
    conn.execute(
        """CREATE TABLE mock_rounds (
	id INTEGER NOT NULL, started_ms INTEGER NOT NULL, finished_ms INTEGER, minutes INTEGER NOT NULL,
	score DOUBLE, state TEXT NOT NULL, PRIMARY KEY (id))"""
    )
    conn.execute("CREATE INDEX ix_mock_rounds_finished ON mock_rounds (finished_ms)")


def _v5_to_v6(conn: sqlite3.Connection) -> None:
    """Version 6: questions a failed lab case brought back into a day's queue."""
    conn.execute(
        """CREATE TABLE lab_recalls (
	question_id VARCHAR NOT NULL, study_day DATE NOT NULL, exercise VARCHAR NOT NULL,
	level INTEGER NOT NULL, case_id VARCHAR NOT NULL, created_ms INTEGER NOT NULL,
	PRIMARY KEY (question_id, study_day))"""
    )


def _v6_to_v7(conn: sqlite3.Connection) -> None:
    """Version 7: each card keeps its FSRS memory state (stability, difficulty, last review),
    computed here once from its answers in time order with the learner's parameters."""
    conn.execute("ALTER TABLE cards ADD COLUMN fsrs_stability DOUBLE")
    conn.execute("ALTER TABLE cards ADD COLUMN fsrs_difficulty DOUBLE")
    conn.execute("ALTER TABLE cards ADD COLUMN fsrs_last_ms INTEGER")
    from scheduler.fsrs_memory import store_memories

    store_memories(conn)


# UPGRADES[v] takes a database from version v to v + 1.
UPGRADES: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5, 5: _v5_to_v6, 6: _v6_to_v7}
assert sorted(UPGRADES) == list(range(1, SCHEMA_VERSION))


def inspect_version(path: Path, uri: str | None = None) -> int:
    """Read an existing file's schema version without writing to it; refuse what we can't use.

    Returns 0 for an empty database (no tables yet). `uri`: how to open it when not the plain
    `mode=ro` (a read-only folder: `Store`'s immutable or private-copy URI).
    """
    try:
        conn = sqlite3.connect(uri or f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise CorruptDatabaseError(f"{path}: cannot open the database ({exc}).") from exc
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as exc:
        if "disk is full" in str(exc):  # not the file's fault: never call it unreadable
            from scheduler.errors import DiskFullError

            raise DiskFullError(
                f"disk full: {path} could not be opened ({exc}); it was left untouched. Free "
                "some space and try again."
            ) from exc
        raise CorruptDatabaseError(
            f"{path} is not a readable SQLite database ({exc}). It was left untouched; restore "
            f"a copy from {path.parent / 'backups'} or move it aside to start afresh."
        ) from exc
    finally:
        conn.close()
    if version > SCHEMA_VERSION:
        raise NewerDatabaseError(
            f"{path} uses schema version {version}, but this Serving Dojo only knows up to "
            f"version {SCHEMA_VERSION}. It was written by a newer release: upgrade the app. "
            "The file was left untouched."
        )
    if version == 0 and tables:
        raise CorruptDatabaseError(
            f"{path} is a SQLite database but not a Serving Dojo one (tables: "
            f"{', '.join(sorted(tables))}). It was left untouched."
        )
    if version >= 1 and not {"cards", "reviews", "settings"} <= tables:
        raise CorruptDatabaseError(
            f"{path} says schema version {version} but lacks the scheduler's tables. "
            "It was left untouched."
        )
    return version


def create_current(conn: sqlite3.Connection) -> None:
    """Create today's schema straight from the models (a fresh database)."""
    from sqlalchemy.dialects import sqlite as sqlite_dialect
    from sqlalchemy.schema import CreateIndex, CreateTable

    from scheduler.models import Base

    dialect = sqlite_dialect.dialect()
    for table in Base.metadata.sorted_tables:
        conn.execute(str(CreateTable(table).compile(dialect=dialect)))
        for index in sorted(table.indexes, key=lambda i: str(i.name)):
            conn.execute(str(CreateIndex(index).compile(dialect=dialect)))


def upgrade(conn: sqlite3.Connection, path: Path) -> None:
    """Run every pending step in one IMMEDIATE transaction (the caller has made a backup).

    `conn` must be in autocommit mode (isolation_level None). Safe against a concurrent
    opener: the version is re-read under the write lock.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise NewerDatabaseError(f"{path}: schema version {version} is newer than this app.")
        if version == 0:
            create_current(conn)
        for step in range(version or SCHEMA_VERSION, SCHEMA_VERSION):
            UPGRADES[step](conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise

