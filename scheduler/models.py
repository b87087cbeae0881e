"""SQLAlchemy 2 typed tables. Internal: the Store returns frozen records, never these objects.

Times are UTC epoch milliseconds (compact, sortable, timezone-free); study days are ISO dates
computed once when the row is written, so stats never re-derive days under other settings.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Index, Integer, String, Text, false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class CardRow(Base):
    """One card per question id. `due` is NULL for a card never reviewed (a new card)."""

    __tablename__ = "cards"

    question_id: Mapped[str] = mapped_column(String, primary_key=True)
    topic: Mapped[str] = mapped_column(String, default="")
    position: Mapped[int] = mapped_column(Integer)  # new-card order (bank order at sync)
    ef: Mapped[int] = mapped_column(Integer, default=250)  # hundredths
    repetitions: Mapped[int] = mapped_column(Integer, default=0)
    interval: Mapped[int] = mapped_column(Integer, default=0)
    due: Mapped[dt.date | None] = mapped_column(default=None)
    lapses: Mapped[int] = mapped_column(Integer, default=0)
    leech: Mapped[bool] = mapped_column(default=False)
    suspended: Mapped[bool] = mapped_column(default=False)
    buried_until: Mapped[dt.date | None] = mapped_column(default=None)
    retired: Mapped[bool] = mapped_column(default=False)  # question gone from the bank
    created_ms: Mapped[int] = mapped_column(Integer)
    last_reviewed_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    # Schema v7: the FSRS memory state after every answer in time order (NULL: none yet).
    fsrs_stability: Mapped[float | None] = mapped_column(default=None)
    fsrs_difficulty: Mapped[float | None] = mapped_column(default=None)
    fsrs_last_ms: Mapped[int | None] = mapped_column(Integer, default=None)

    __table_args__ = (
        Index("ix_cards_due", "due"),
        Index("ix_cards_position", "position"),
    )


class ReviewRow(Base):
    """Append-only answer log with the state before and after: enough to undo or replay."""

    __tablename__ = "reviews"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(String, unique=True)  # stable across export/import
    question_id: Mapped[str] = mapped_column(ForeignKey("cards.question_id"))
    reviewed_ms: Mapped[int] = mapped_column(Integer)
    study_day: Mapped[dt.date] = mapped_column()
    mode: Mapped[str] = mapped_column(String)  # review | redrill | cram
    quality: Mapped[int] = mapped_column(Integer)
    correct: Mapped[bool] = mapped_column()
    answer_text: Mapped[str] = mapped_column(Text, default="")
    response_ms: Mapped[int] = mapped_column(Integer)
    params: Mapped[str | None] = mapped_column(Text, default=None)  # JSON object
    ef_before: Mapped[int] = mapped_column(Integer)
    reps_before: Mapped[int] = mapped_column(Integer)
    interval_before: Mapped[int] = mapped_column(Integer)
    due_before: Mapped[dt.date | None] = mapped_column(default=None)
    lapses_before: Mapped[int] = mapped_column(Integer)
    leech_before: Mapped[bool] = mapped_column()
    last_reviewed_ms_before: Mapped[int | None] = mapped_column(Integer, default=None)
    ef_after: Mapped[int] = mapped_column(Integer)
    reps_after: Mapped[int] = mapped_column(Integer)
    interval_after: Mapped[int] = mapped_column(Integer)
    due_after: Mapped[dt.date | None] = mapped_column(default=None)
    lapses_after: Mapped[int] = mapped_column(Integer)
    leech_after: Mapped[bool] = mapped_column()
    # Schema v3: the named mistake a wrong answer matched ("choice:<i>" for an MCQ
    # distractor), and whether the learner counted a wrong verdict right after a typo.
    mistake_id: Mapped[str | None] = mapped_column(String, default=None)
    overridden: Mapped[bool] = mapped_column(default=False, server_default=false())

    __table_args__ = (
        Index("ix_reviews_question", "question_id", "id"),
        Index("ix_reviews_day", "study_day"),
    )


class SettingRow(Base):
    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(String, primary_key=True)
    value: Mapped[str] = mapped_column(Text)  # JSON


class FlagRow(Base):
    """A learner's note that a question looks wrong; kept until cleared."""

    __tablename__ = "flags"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    question_id: Mapped[str] = mapped_column(ForeignKey("cards.question_id"))
    note: Mapped[str] = mapped_column(Text)
    created_ms: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_flags_question", "question_id"),)


class LabAttemptRow(Base):
    __tablename__ = "lab_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(String, unique=True)
    exercise: Mapped[str] = mapped_column(String)
    level: Mapped[int] = mapped_column(Integer)
    device: Mapped[str] = mapped_column(String)
    passed: Mapped[bool] = mapped_column()
    cases: Mapped[str] = mapped_column(Text)  # JSON list of objects
    metrics: Mapped[str] = mapped_column(Text)  # JSON object
    duration_s: Mapped[float] = mapped_column()
    created_ms: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_lab_attempts_exercise", "exercise", "id"),)


class LabCardRow(Base):
    """A passed lab level as a card (schema v4): the same SM-2 fields as `CardRow`, keyed by
    exercise and level. Created by the level's first pass; a rebuild's pass or abandon grades
    it. `last_pass_s`/`last_pass_gradings` describe the latest pass ("in 14 min")."""

    __tablename__ = "lab_cards"

    exercise: Mapped[str] = mapped_column(String, primary_key=True)
    level: Mapped[int] = mapped_column(Integer, primary_key=True)
    ef: Mapped[int] = mapped_column(Integer, default=250)  # hundredths
    repetitions: Mapped[int] = mapped_column(Integer, default=0)
    interval: Mapped[int] = mapped_column(Integer, default=0)
    due: Mapped[dt.date | None] = mapped_column(default=None)
    lapses: Mapped[int] = mapped_column(Integer, default=0)
    leech: Mapped[bool] = mapped_column(default=False)
    created_ms: Mapped[int] = mapped_column(Integer)
    last_reviewed_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    last_reviewed_day: Mapped[dt.date | None] = mapped_column(default=None)
    last_passed_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    last_pass_s: Mapped[float | None] = mapped_column(default=None)
    last_pass_gradings: Mapped[int | None] = mapped_column(Integer, default=None)

    __table_args__ = (Index("ix_lab_cards_due", "due"),)


class MockRoundRow(Base):
    """One mock interview round (schema v5): its whole state as JSON, so a round left open
    when the app closed resumes where it stopped; `score` (0..1) is set when it finishes."""

    __tablename__ = "mock_rounds"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    started_ms: Mapped[int] = mapped_column(Integer)
    finished_ms: Mapped[int | None] = mapped_column(Integer, default=None)
    minutes: Mapped[int] = mapped_column(Integer)
    score: Mapped[float | None] = mapped_column(default=None)
    state: Mapped[str] = mapped_column(Text)  # JSON object (trainer.core.mock.MockRound)

    __table_args__ = (Index("ix_mock_rounds_finished", "finished_ms"),)


class LabRecallRow(Base):
    """A question a failed lab case brought back into one study day's queue (schema v6): once
    per question per day; the card's SM-2 state is not touched."""

    __tablename__ = "lab_recalls"

    question_id: Mapped[str] = mapped_column(String, primary_key=True)
    study_day: Mapped[dt.date] = mapped_column(primary_key=True)
    exercise: Mapped[str] = mapped_column(String)
    level: Mapped[int] = mapped_column(Integer)
    case_id: Mapped[str] = mapped_column(String)
    created_ms: Mapped[int] = mapped_column(Integer)
