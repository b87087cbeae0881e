"""Store part: statistics read from the answer log and the cards (the stats screen's figures)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.sql.elements import ColumnElement, SQLColumnExpression
from sqlalchemy.sql.expression import case

from scheduler import quick
from scheduler.days import streak_from_days
from scheduler.models import CardRow, ReviewRow
from scheduler.quick import MATURE_DAYS
from scheduler.records import MistakeCount, Retention, TopicAccuracy
from scheduler.sm2 import CardState
from scheduler.storage.base import raw_connection
from scheduler.storage.settings import SettingsPart

if TYPE_CHECKING:
    from scheduler.plan import Pace

INTERVAL_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1d", 1, 1),
    ("2-6d", 2, 6),
    ("7-20d", 7, 20),
    ("21-59d", 21, 59),
    ("60-179d", 60, 179),
    ("180d+", 180, None),
)


def _count_where(condition: SQLColumnExpression[bool]) -> ColumnElement[int]:
    """How many rows satisfy `condition`, as an integer column.

    Never `func.sum(condition)`: SQLAlchemy types that sum as the condition's Boolean and turns
    the count into True/False when reading it back, so 43 successes would read as 1."""
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


class StatsPart(SettingsPart):
    """Read-only figures over the answer log."""

    # ------------------------------------------------------------------------------- stats
    def reviews_per_day(
        self, days: int = 365, now: dt.datetime | None = None
    ) -> dict[dt.date, int]:
        """Answers (all modes) per study day over the last `days` days, oldest first (zeros
        included), for a heatmap."""
        today = self.study_day(now)
        with self._read() as s:  # the home screen's quick read runs the same SQL
            return quick.reviews_per_day(raw_connection(s), today,
                                         days)

    def streak(self, now: dt.datetime | None = None) -> int:
        """Consecutive study days with at least one answer, ending today (or yesterday, so an
        unfinished today does not break it)."""
        today = self.study_day(now)
        with self._read() as s:
            days = quick.study_days(raw_connection(s), today)
        return streak_from_days(days, today)

    def true_retention(self, days: int = 30, now: dt.datetime | None = None) -> Retention:
        """Share of passes (grade >= 3) on mature cards (interval >= 21 d before the answer)
        over `days` days, counting only scheduled reviews (at most one a card a day), never a
        re-drill or cram answer, even one given earlier that day."""
        today = self.study_day(now)
        with self._read() as s:
            return quick.true_retention(raw_connection(s), today,
                                        days)

    def pace(self) -> Pace:
        """The learner's pace the plan is simulated at (`scheduler.plan.Pace`)."""
        with self._read() as s:  # the home screen's quick read runs the same SQL
            return quick.read_pace(raw_connection(s))

    def predicted_recall(self, now: dt.datetime | None = None) -> float | None:
        """FSRS's mean predicted recall now over the introduced cards in study (answered on
        the schedule at least once; suspended and retired left out), from each card's stored
        memory; None before any."""
        from scheduler.days import from_ms, utc_now
        from scheduler.fsrs_memory import Memory, make_scheduler, recall
        from scheduler.storage.memory import fsrs_parameters

        moment = now or utc_now()
        with self._read() as s:
            rows = s.execute(
                select(CardRow.fsrs_stability, CardRow.fsrs_difficulty, CardRow.fsrs_last_ms)
                .where(CardRow.due.is_not(None), ~CardRow.retired, ~CardRow.suspended,
                       CardRow.fsrs_last_ms.is_not(None))).all()
            fsrs = make_scheduler(fsrs_parameters(s))
        values = [recall(Memory(st, d, from_ms(ms)), moment, fsrs) for st, d, ms in rows
                  if st is not None and d is not None and ms is not None]
        return sum(values) / len(values) if values else None

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
        with self._read() as s:
            return quick.forecast(raw_connection(s), today, days)

    def ef_distribution(self) -> dict[Decimal, int]:
        """Number of reviewed cards in study at each EF, lowest EF first (suspended and retired
        cards left out, as in the forecast)."""
        with self._read() as s:
            rows = s.execute(
                select(CardRow.ef, func.count()).where(CardRow.due.is_not(None), ~CardRow.retired,
                                                       ~CardRow.suspended)
                .group_by(CardRow.ef).order_by(CardRow.ef)
            ).all()
        return {CardState(ef).ef: n for ef, n in rows}

    def interval_distribution(self) -> dict[str, int]:
        """Number of reviewed cards in study per interval bucket (1d, 2-6d, ..., 180d+;
        suspended and retired cards left out, as in the forecast)."""
        with self._read() as s:
            rows = s.execute(
                select(CardRow.interval, func.count())
                .where(CardRow.due.is_not(None), ~CardRow.retired, ~CardRow.suspended)
                .group_by(CardRow.interval)
            ).all()
        out = {label: 0 for label, _, _ in INTERVAL_BUCKETS}
        for interval, n in rows:
            for label, low, high in INTERVAL_BUCKETS:
                if interval >= low and (high is None or interval <= high):
                    out[label] += n
        return out
