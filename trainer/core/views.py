"""What the home, browse and stats screens show: plain dataclasses computed in one go, off the UI
thread, from the store and the bank."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab.rebuild import DueRebuild
    from scheduler.records import Card, LabAttempt, QueueItem
    from trainer.core.plan import PlanReport
    from trainer.core.services import Services
    from trainer.core.stats import RecurringMistake


@dataclass(frozen=True)
class TodayView:
    """Everything the home screen shows."""

    day: dt.date
    due: int
    new: int
    redrill: int
    streak: int
    reviews_today: int
    retention: float | None
    per_day: dict[dt.date, int]
    forecast: list[int]
    first_run: bool
    total_questions: int
    topics: list[tuple[str, str]]  # (id, title)
    bank_errors: list[str]
    warnings: tuple[str, ...] = ()
    rebuilds: tuple[DueRebuild, ...] = ()  # passed lab levels due for a rebuild (lab.rebuild)
    plan: PlanReport | None = None  # the plan to the interview and per-topic readiness
    # Questions a failed lab case brought back today (lab.concepts), one line per case: why
    # they are in the queue.
    lab: int = 0
    lab_reasons: tuple[str, ...] = ()
    read_only: str | None = None  # why no session can save now (`Services.cannot_save`)

    @property
    def to_do(self) -> int:
        return self.due + self.new + self.redrill + self.lab


def today_view(services: Services, *, plan: bool = True) -> TodayView:
    """The home screen's data. `plan=False` leaves out the plan and readiness (an FSRS replay
    of every answer, most of this function's time on a long history): Home paints the rest
    first and fills the plan in after (`plan_report_or_none`)."""
    from lab.rebuild import due_rebuilds

    store, now = services.store, services.now
    queue = store.today_queue(now)
    per_day = store.reviews_per_day(84, now)
    first_run = not any(per_day.values()) and all(c.is_new for c in store.cards())
    return TodayView(
        day=queue.day,
        due=len(queue.reviews),
        new=len(queue.new),
        redrill=len(queue.redrill),
        streak=store.streak(now),
        reviews_today=per_day.get(queue.day, 0),
        retention=store.true_retention(30, now).rate,
        per_day=per_day,
        forecast=list(store.forecast(14, now).values()),
        first_run=first_run,
        total_questions=len(services.bank.questions),
        topics=sorted((tid, t.title) for tid, t in services.bank.topics.items()),
        bank_errors=services.bank_errors(),
        warnings=tuple(services.warnings()),
        rebuilds=tuple(due_rebuilds(store, now)),
        plan=plan_report_or_none(services) if plan else None,
        lab=len(queue.lab),
        lab_reasons=_lab_reasons(queue.lab),
        read_only=services.cannot_save(),
    )


def quick_today_view() -> TodayView | None:
    """The home screen's data before the store opens and the bank loads: plain sqlite3
    (`scheduler.quick.quick_home`) and the cached study index, as `today_view` gives it
    after the store opens, or None where only the full path can say (no current index, a
    bank with problems, whatever `quick_home` leaves to the store, a plan that cannot be
    computed). With an interview date set, the plan's simulation comes from the plan cache
    (`scheduler.plan_cache`) when nothing it depends on changed, else it runs here."""
    from scheduler.days import pinned_now
    from scheduler.paths import DB_NAME, data_dir
    from scheduler.quick import quick_home
    from trainer.core.bank import study_index
    from trainer.core.plan import Outline, planned_report, readiness_report

    try:
        now = pinned_now()
    except ValueError:  # a bad $DOJO_NOW: the full path says why
        return None
    index = study_index()
    if index is None or not index.questions or index.problem_files:
        return None  # no current index, an empty bank, or errors only the bank can word
    folder = data_dir()
    home = quick_home(folder / DB_NAME, index.questions, now)
    if home is None:
        return None
    queue = home.queue
    outline = Outline.of(index.questions, dict(index.topics), index.labs)
    if home.plan is None:
        plan = readiness_report(home.settings, queue.day, home.cards, home.fsrs_parameters,
                                home.labs_passed, outline)
    else:
        assert home.pace is not None  # read with the plan
        try:
            plan = planned_report(home.settings, queue.day, home.plan, home.cards,
                                  home.fsrs_parameters, home.labs_passed, outline, home.pace,
                                  folder, introduced_today=queue.introduced)
        except Exception:  # e.g. fsrs missing from a broken install: the full path warns
            return None
    view = TodayView(
        day=queue.day,
        due=len(queue.reviews),
        new=len(queue.new),
        redrill=len(queue.redrill),
        streak=home.streak,
        reviews_today=home.per_day.get(queue.day, 0),
        retention=home.retention.rate,
        per_day=home.per_day,
        forecast=list(home.forecast.values()),
        first_run=home.first_run,
        total_questions=index.total,
        topics=list(index.topics),
        bank_errors=[],
        plan=plan,
        lab=len(queue.lab),
        lab_reasons=_lab_reasons(queue.lab),
    )
    return view


def plan_report_or_none(services: Services) -> PlanReport | None:
    """The plan and readiness; None (and a warning) rather than no home screen if it fails."""
    from trainer.core.plan import plan_report

    try:
        return plan_report(services.store, services.bank, services.now)
    except Exception as exc:  # e.g. fsrs missing from a broken install
        warning = f"the plan could not be computed ({exc})"
        if warning not in services.store.warnings:
            services.store.warnings.append(warning)
        return None


def prepare_plans_ahead(services: Services, *, first: int = 1) -> None:
    """The plans of the next days (`first` 0: today's too) computed ahead into the plan
    cache (`trainer.core.plan.prepare_days_ahead`): on the home's worker after today's is
    shown, and as the app quits (answers given since the home last showed the plan leave it
    stale). A failure only costs those days' first start the simulation."""
    import contextlib

    from trainer.core.plan import prepare_days_ahead

    # Today's plan already said what failed (`plan_report_or_none`).
    with contextlib.suppress(Exception):
        prepare_days_ahead(services.store, services.bank, services.now, first=first)


def _lab_reasons(items: tuple[QueueItem, ...]) -> tuple[str, ...]:
    """"kv-bytes L1 failed int4-odd-head-dim → kv-cache-009, kv-cache-003", per failed case."""
    by_case: dict[str, list[str]] = {}
    for i in items:
        by_case.setdefault(f"{i.exercise} L{i.level} failed {i.case}", []).append(i.question_id)
    return tuple(f"{case} → {', '.join(ids)}" for case, ids in by_case.items())


# --- browse -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrowseRow:
    question_id: str
    topic: str
    kind: str
    status: str  # new | due | scheduled | suspended | leech | buried | retired
    due: dt.date | None
    ef: float | None
    interval: int | None
    lapses: int
    text: str  # the prompt as written (placeholders unfilled), for search
    flags: tuple[str, ...] = ()  # the learner's "this looks wrong" notes, oldest first


@dataclass(frozen=True)
class HistoryRow:
    when: dt.datetime | None
    mode: str
    quality: int
    correct: bool
    answer: str
    interval: int | None
    response_ms: int
    overridden: bool = False  # counted right after a typo
    mistake_id: str | None = None


def _card_status(card: Card, today: dt.date) -> str:
    if card.retired:
        return "retired"
    if card.suspended:
        return "suspended"
    if card.buried_until is not None and card.buried_until >= today:
        return "buried"
    if card.leech:
        return "leech"
    if card.due is None:
        return "new"
    return "due" if card.due <= today else "scheduled"


def browse_rows(services: Services) -> list[BrowseRow]:
    """Every question in the bank with its card's scheduling state."""
    today = services.day()
    cards = {c.question_id: c for c in services.store.cards()}
    flags: dict[str, list[str]] = {}
    for flag in services.store.flags():
        flags.setdefault(flag.question_id, []).append(flag.note)
    rows = []
    for q in services.bank.questions:
        card = cards.get(q.id)
        reviewed = card is not None and not card.is_new
        rows.append(
            BrowseRow(
                question_id=q.id,
                topic=q.topic,
                kind=q.kind,
                status=_card_status(card, today) if card is not None else "new",
                due=card.due if card is not None else None,
                ef=float(card.ef) if card is not None and reviewed else None,
                interval=card.interval if card is not None and reviewed else None,
                lapses=card.lapses if card is not None else 0,
                text=" ".join(q.prompt.split()),
                flags=tuple(flags.get(q.id, ())),
            )
        )
    return rows


def card_history(services: Services, question_id: str) -> list[HistoryRow]:
    """Each logged answer to a card: when, mode, grade, what was typed, the interval after."""
    return [
        HistoryRow(
            when=r.reviewed_at,
            mode=r.mode,
            quality=r.quality,
            correct=r.correct,
            answer=r.answer_text,
            interval=r.after.interval if r.mode == "review" else None,
            response_ms=r.response_ms,
            overridden=r.overridden,
            mistake_id=r.mistake_id,
        )
        for r in services.store.history(question_id)
    ]


# --- stats --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StatsView:
    day: dt.date
    per_day: dict[dt.date, int]
    retention: list[tuple[str, float | None, int]]  # (window, rate, mature answers counted)
    retention_weeks: list[float | None]  # true retention per week, oldest first (12 weeks)
    topics: list[tuple[str, int, int, int]]  # (title, answered, correct, of which overridden)
    ef: list[tuple[str, int]]
    intervals: list[tuple[str, int]]
    forecast: list[int]
    streak: int
    lab: list[tuple[str, int, bool, int, str]]  # (exercise, level, passed ever, attempts, best)
    overridden: int  # answers counted right after a typo, last 365 days
    mistakes: list[RecurringMistake]  # recurring mistakes, last 30 days
    rehearsals: list[str] = field(default_factory=list)  # a chart line per rehearsed level
    plan: PlanReport | None = None  # the plan and every topic's readiness, weakest first
    predicted_recall: float | None = None  # FSRS's mean recall now over introduced cards


def stats_view(services: Services) -> StatsView:
    from trainer.core.stats import collect, rehearsal_line  # not on the home's start

    store, now = services.store, services.now
    report = collect(store, 365, now, services.bank)
    retention = []
    for days in (7, 30, 90, 365):
        raw = store.true_retention(days, now)
        retention.append((f"{days} d", raw.rate, raw.total))
    topics = [
        (services.topic_title(t.topic), t.answered, t.correct, t.overridden)
        for t in report.topics.values()
    ]
    lab: dict[tuple[str, int], list[LabAttempt]] = {}
    for attempt in store.lab_attempts():
        lab.setdefault((attempt.exercise, attempt.level), []).append(attempt)
    lab_rows = []
    for (exercise, level), attempts in sorted(lab.items()):
        passed = any(a.passed for a in attempts)
        best = min((a.duration_s for a in attempts if a.passed), default=None)
        lab_rows.append(
            (exercise, level, passed, len(attempts), "" if best is None else f"{best:.1f} s")
        )
    return StatsView(
        day=report.day,
        per_day=report.per_day,
        retention=retention,
        retention_weeks=[r.rate for _, r in store.retention_by_week(12, now)],
        topics=topics,
        ef=[(f"{ef:.2f}", n) for ef, n in report.ef.items()],
        intervals=list(report.intervals.items()),
        forecast=list(store.forecast(30, now).values()),
        streak=report.streak,
        lab=lab_rows,
        overridden=report.overridden,
        mistakes=report.mistakes,
        rehearsals=[rehearsal_line(r) for r in report.rehearsals],
        predicted_recall=report.predicted_recall,
        plan=plan_report_or_none(services),
    )
