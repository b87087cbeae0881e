"""Plain frozen records the Store returns, so callers never hold live ORM objects."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from scheduler.fsrs_memory import Memory
from scheduler.sm2 import CardState

QueueKind = Literal["review", "new", "redrill", "lab"]
Mode = Literal["review", "redrill", "cram"]  # how an answer counts (`scheduler.transition.apply`)
MODES: tuple[Mode, ...] = ("review", "redrill", "cram")


@dataclass(frozen=True)
class Scheduled:
    """The scheduling fields of a card, before or after an answer."""

    state: CardState
    due: dt.date | None  # None: never reviewed
    lapses: int
    leech: bool


@dataclass(frozen=True)
class Settings:
    """Learner settings, stored in the database's settings table."""

    new_limit: int = 10  # new cards introduced per study day
    review_limit: int = 200  # scheduled answers (reviews + new) per study day
    rollover_hour: int = 4  # local hour at which a new study day starts
    timezone: str | None = None  # IANA name; None = the system's local time
    backup_keep: int = 7  # rolling backups kept
    leech_lapses: int = 8  # lapses at which a card is flagged a leech
    scheduler: str = "sm2"  # "sm2" (default) or "fsrs": what sets a review's next due day
    desired_retention: float = 0.90  # FSRS: the recall a review is scheduled for (0.70-0.97)
    lab_host: str | None = None  # SSH host labs are graded on (`dojo lab grade --on`); None: here


@dataclass(frozen=True)
class Card:
    question_id: str
    topic: str
    state: CardState
    due: dt.date | None  # None: never reviewed (a new card)
    lapses: int
    leech: bool
    suspended: bool
    buried_until: dt.date | None  # hidden while the study day <= this
    retired: bool  # its question left the bank; kept for history, never queued
    created_at: dt.datetime
    last_reviewed_at: dt.datetime | None
    # FSRS memory after its answers (None: never answered). Not part of equality: a card
    # "unchanged" by cram or re-drill keeps its schedule while its memory moves.
    memory: Memory | None = field(default=None, compare=False)

    @property
    def is_new(self) -> bool:
        return self.due is None

    @property
    def scheduled(self) -> Scheduled:
        """The fields an answer changes, as `transition.apply` takes them."""
        return Scheduled(self.state, self.due, self.lapses, self.leech)

    @property
    def ef(self) -> Decimal:
        return self.state.ef

    @property
    def repetitions(self) -> int:
        return self.state.repetitions

    @property
    def interval(self) -> int:
        return self.state.interval


@dataclass(frozen=True)
class QueueItem:
    question_id: str
    topic: str
    kind: QueueKind
    due: dt.date | None  # None for new cards (a "lab" item: its card's due day, None if new)
    # kind "lab": the grading case whose failure brought the question back today
    exercise: str | None = None
    level: int | None = None
    case: str | None = None


@dataclass(frozen=True)
class Queue:
    """Today's work in the order to do it: reviews (oldest first), new cards, then re-drill."""

    day: dt.date
    reviews: tuple[QueueItem, ...]
    new: tuple[QueueItem, ...]
    redrill: tuple[QueueItem, ...]
    lab: tuple[QueueItem, ...] = ()  # brought back by a failed lab case (lab.concepts)
    introduced: int = 0  # new cards already introduced today (the plan's pace counts them)

    @property
    def items(self) -> tuple[QueueItem, ...]:
        return self.reviews + self.new + self.lab + self.redrill

    def __len__(self) -> int:
        return len(self.reviews) + len(self.new) + len(self.lab) + len(self.redrill)


@dataclass(frozen=True)
class ReviewResult:
    review_id: int
    question_id: str
    mode: Mode
    quality: int
    correct: bool
    day: dt.date
    before: CardState
    after: CardState  # equals `before` for re-drill and cram
    due: dt.date | None  # the card's due day after this answer
    lapses: int
    leech: bool
    became_leech: bool  # this answer crossed the leech threshold
    needs_redrill: bool = False  # graded below the re-drill bar: comes back today


@dataclass(frozen=True)
class Review:
    """One row of the append-only answer log."""

    id: int
    uid: str
    question_id: str
    reviewed_at: dt.datetime
    day: dt.date
    mode: Mode
    quality: int
    correct: bool
    answer_text: str
    response_ms: int
    params: dict[str, Any] | None
    before: CardState
    after: CardState
    due_before: dt.date | None
    due_after: dt.date | None
    mistake_id: str | None = None  # the named mistake / MCQ distractor ("choice:<i>") matched
    overridden: bool = False  # a wrong verdict the learner counted right after a typo


@dataclass(frozen=True)
class UndoResult:
    review_id: int
    question_id: str
    mode: Mode
    quality: int
    card: Card  # the card as restored


@dataclass(frozen=True)
class Flag:
    id: int
    question_id: str
    note: str
    created_at: dt.datetime


@dataclass(frozen=True)
class LabAttempt:
    id: int
    exercise: str
    level: int
    device: str
    passed: bool
    cases: list[dict[str, Any]] = field(hash=False)
    metrics: dict[str, Any] = field(hash=False)
    duration_s: float
    created_at: dt.datetime


@dataclass(frozen=True)
class LabCard:
    """A passed lab level on the SM-2 schedule (see `Store.grade_lab_card`)."""

    exercise: str
    level: int
    state: CardState
    due: dt.date | None
    lapses: int
    leech: bool
    created_at: dt.datetime
    last_reviewed_day: dt.date | None
    last_passed_at: dt.datetime | None
    last_pass_s: float | None  # time to pass in the latest timed pass (a rehearsal)
    last_pass_gradings: int | None

    @property
    def scheduled(self) -> Scheduled:
        return Scheduled(self.state, self.due, self.lapses, self.leech)


@dataclass(frozen=True)
class LabCardResult:
    """What one lab pass (or abandoned rebuild) did to its card."""

    card: LabCard | None  # None: an abandoned rebuild of a level that has no card
    created: bool  # the level's first pass made the card
    graded: bool  # the schedule moved (creation counts: the first pass is the first review)
    quality: int
    why_not: str = ""  # when not graded: why the schedule stayed as it was


@dataclass(frozen=True)
class Retention:
    passed: int
    total: int

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None


@dataclass(frozen=True)
class TopicAccuracy:
    topic: str
    answered: int
    correct: int
    overridden: int = 0  # of `correct`: wrong verdicts counted right after a typo

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.answered if self.answered else None


@dataclass(frozen=True)
class MistakeCount:
    """How often one named mistake of one question was made in a window."""

    question_id: str
    topic: str
    mistake_id: str  # the question's mistake id, or "choice:<original index>" for a distractor
    count: int
    last_day: dt.date


@dataclass(frozen=True)
class SyncResult:
    added: int
    updated: int
    retired: int


@dataclass(frozen=True)
class ImportSummary:
    cards_added: int
    cards_updated: int
    reviews_added: int
    reviews_skipped: int
    lab_attempts_added: int
    lab_attempts_skipped: int
    flags_added: int = 0
    lab_cards_added: int = 0
    lab_cards_updated: int = 0
    mock_rounds_added: int = 0
