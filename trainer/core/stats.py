"""The statistics report shared by the Stats screen and `dojo stats` (text and --json).

"Recurring mistakes" name what the learner keeps doing wrong: a numeric question's named mistake
(its `says` line) or an MCQ distractor (its `why`), each with the topic whose concept note
explains it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from questions.bank import Bank
    from questions.model import Question
    from scheduler.records import Card, LabAttempt, Retention, TopicAccuracy
    from scheduler.store import Store

MISTAKE_DAYS = 30
SPARKS = "▁▂▃▄▅▆▇█"
REHEARSAL_SPARKS = 12  # the latest rehearsals a chart line shows


# Learners confuse the two figures: each is shown with its one-sentence definition.
TRUE_RETENTION_MEANS = ("true retention: the share of your scheduled reviews of mature cards "
                        "(interval of 21 days or more) that you passed")
PREDICTED_RECALL_MEANS = ("predicted recall: FSRS's average chance that you would recall each "
                          "card you have studied if asked right now")


@dataclass(frozen=True)
class Rehearsals:
    """Interview rehearsals of one lab level: the time to first pass of each, oldest first."""

    exercise: str
    level: int
    times: list[tuple[dt.datetime, float]]  # (when it passed, seconds from the clock's start)

    @property
    def best_s(self) -> float:
        return min(t for _, t in self.times)

    @property
    def latest_s(self) -> float:
        return self.times[-1][1]


def rehearsal_times(attempts: list[LabAttempt]) -> list[Rehearsals]:
    """Per exercise and level, each rehearsal's time to first pass (rebuilds included).

    An attempt graded in a rehearsal carries `interview_elapsed_s` (and, since lab cards,
    `interview_level`); one rehearsal's attempts share the clock's start (created_at less the
    elapsed time), so the first passing attempt of each start is its time to first pass."""
    firsts: dict[tuple[str, int], dict[int, tuple[dt.datetime, float]]] = {}
    for a in attempts:
        elapsed = a.metrics.get("interview_elapsed_s")
        level = a.metrics.get("interview_level", a.level)
        if not a.passed or not isinstance(elapsed, int | float) or level != a.level:
            continue
        started = round((a.created_at.timestamp() - float(elapsed)) / 5)  # same clock: +-5 s
        runs = firsts.setdefault((a.exercise, a.level), {})
        if not any(abs(started - s) <= 1 for s in runs):
            runs[started] = (a.created_at, float(elapsed))
    return [Rehearsals(ex, lvl, sorted(runs.values()))
            for (ex, lvl), runs in sorted(firsts.items())]


def mmss(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def rehearsal_line(r: Rehearsals) -> str:
    """One chart line: "kv-bytes L2  ▇▅▃  best 6:12 · latest 8:40 · 3 rehearsals" (a bar per
    rehearsal, oldest first, the tallest the slowest of those shown)."""
    from questions.wording import plural

    shown = [t for _, t in r.times[-REHEARSAL_SPARKS:]]
    peak = max(shown) or 1.0
    spark = "".join(SPARKS[min(len(SPARKS) - 1, int(t / peak * (len(SPARKS) - 1)))]
                    for t in shown)
    return (f"{r.exercise} L{r.level}  {spark}  best {mmss(r.best_s)} · latest "
            f"{mmss(r.latest_s)} · {plural(len(r.times), 'rehearsal')}")


@dataclass(frozen=True)
class RecurringMistake:
    """One recurring mistake: what it is, how often, and where its concept note is."""

    question_id: str
    topic: str  # topic id: its concept note is the bank's topic note
    topic_title: str
    mistake_id: str
    says: str  # the mistake's own line, or the distractor and its why
    count: int
    last_day: dt.date


@dataclass(frozen=True)
class StatsReport:
    day: dt.date
    days: int  # the window of per_day, retention, forecast and overrides
    streak: int
    per_day: dict[dt.date, int]
    retention: Retention
    topics: dict[str, TopicAccuracy]
    forecast: dict[dt.date, int]
    ef: dict[Decimal, int]
    intervals: dict[str, int]
    cards: list[Card]
    overridden: int  # answers counted right after a typo, in the window
    mistakes: list[RecurringMistake]  # over the last MISTAKE_DAYS days, most frequent first
    rehearsals: list[Rehearsals] = field(default_factory=list)  # interview times per level
    # true retention per 7-day window, oldest first, the last ending today (12 weeks)
    weeks: list[tuple[dt.date, Retention]] = field(default_factory=list)
    predicted_recall: float | None = None  # FSRS's mean recall now over introduced cards


def collect(
    store: Store, days: int = 30, now: dt.datetime | None = None, bank: Bank | None = None
) -> StatsReport:
    """Everything `dojo stats` prints, over the last `days` days (mistakes: the last 30)."""
    return StatsReport(
        day=store.study_day(now),
        days=days,
        streak=store.streak(now),
        per_day=store.reviews_per_day(days, now),
        retention=store.true_retention(days, now),
        topics=store.topic_accuracy(),
        forecast=store.forecast(days, now),
        ef=store.ef_distribution(),
        intervals=store.interval_distribution(),
        cards=store.cards(),
        overridden=store.overrides(days, now),
        mistakes=recurring_mistakes(store, bank, now),
        rehearsals=rehearsal_times(store.lab_attempts()),
        weeks=store.retention_by_week(12, now),
        predicted_recall=store.predicted_recall(now),
    )


def recurring_mistakes(
    store: Store, bank: Bank | None, now: dt.datetime | None = None, limit: int = 10
) -> list[RecurringMistake]:
    """The mistakes fallen for most over the last 30 days, described from the bank."""
    out = []
    for m in store.recurring_mistakes(MISTAKE_DAYS, now, limit):
        question = bank.get(m.question_id) if bank is not None else None
        topic = bank.topics.get(m.topic) if bank is not None else None
        out.append(RecurringMistake(
            question_id=m.question_id, topic=m.topic,
            topic_title=topic.title if topic is not None else m.topic,
            mistake_id=m.mistake_id, says=describe_mistake(question, m.mistake_id),
            count=m.count, last_day=m.last_day,
        ))
    return out


def describe_mistake(question: Question | None, mistake_id: str) -> str:
    """The learner-facing line for a mistake id: a numeric mistake's `says`, or for
    `choice:<i>` the distractor as written plus its `why`; the bare id when the question (or
    that mistake) is no longer in the bank."""
    if question is None:
        return mistake_id
    kind, _, index = mistake_id.partition(":")
    if kind == "choice" and index.isdecimal():
        i = int(index)
        if i < len(question.choices):
            whys = question.why  # parallel to `choices`
            why = whys[i] if i < len(whys) and whys[i] else ""
            chosen = " ".join(question.choices[i].split())
            return f"chose “{chosen}”" + (f": {why}" if why else "")
        return mistake_id
    for step in question.steps:  # a case study's `<step name>:<id>`
        if step.name == kind and index:
            says = describe_mistake(step.question, index)
            return f"{step.name}: {says}" if says != index else mistake_id
    for mistake in question.mistakes:
        if mistake.id == mistake_id:
            return mistake.says or mistake_id
    return mistake_id


def report_json(report: StatsReport) -> dict[str, Any]:
    """The report as `dojo stats --json` prints it."""
    r = report.retention
    return {
        "streak": report.streak,
        "reviews_per_day": {d.isoformat(): n for d, n in report.per_day.items()},
        "true_retention": {"passed": r.passed, "total": r.total, "rate": r.rate},
        "predicted_recall": report.predicted_recall,
        "definitions": {"true_retention": TRUE_RETENTION_MEANS,
                        "predicted_recall": PREDICTED_RECALL_MEANS},
        "retention_by_week": [
            {"week_of": start.isoformat(), "passed": w.passed, "total": w.total, "rate": w.rate}
            for start, w in report.weeks
        ],
        "topic_accuracy": {
            t: {"answered": a.answered, "correct": a.correct, "overridden": a.overridden,
                "accuracy": a.accuracy}
            for t, a in report.topics.items()
        },
        "overridden": report.overridden,
        "forecast": {d.isoformat(): n for d, n in report.forecast.items()},
        "ef_distribution": {str(ef): n for ef, n in report.ef.items()},
        "interval_distribution": report.intervals,
        "recurring_mistakes": [
            {"question_id": m.question_id, "topic": m.topic, "mistake_id": m.mistake_id,
             "says": m.says, "count": m.count, "last_day": m.last_day.isoformat()}
            for m in report.mistakes
        ],
        "rehearsals": [
            {"exercise": r.exercise, "level": r.level, "best_s": r.best_s,
             "times": [{"passed_at": when.isoformat(), "seconds": t} for when, t in r.times]}
            for r in report.rehearsals
        ],
    }
