"""The plan to the interview day and per-topic readiness, from the store and the bank: what
`dojo plan`, Today and Stats show (scheduler.plan and scheduler.readiness do the arithmetic)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from questions.bank import Bank
    from scheduler.feasibility import BudgetRow
    from scheduler.plan import Pace, Plan
    from scheduler.records import Card, Settings
    from scheduler.store import Store



@dataclass(frozen=True)
class TopicReadiness:
    topic: str
    title: str
    cards: int  # the topic's cards in study (not suspended, not retired)
    introduced: int  # of those, answered on the schedule at least once
    recall_on_day: float  # mean predicted recall of the introduced cards; 0 with none
    labs_passed: int  # lab levels linked from the topic's questions, passed
    labs_total: int


HORIZON_DAYS = 7  # without a plan, topics are ranked by recall this many days ahead


@dataclass(frozen=True)
class PlanReport:
    plan: Plan | None
    today: dt.date
    at: dt.datetime  # the moment recall is predicted for: the interview day's start, or 7 d on
    days_left: int | None
    new_per_day: int | None
    feasible: bool | None
    reason: str
    topics: list[TopicReadiness]  # weakest first
    table: tuple[BudgetRow, ...] = ()  # workload vs recall: no further study, then budgets

    @property
    def horizon(self) -> str:
        """The day recall is predicted for, in words."""
        if self.plan is not None:
            return f"on the interview day ({self.plan.interview})"
        return f"in {HORIZON_DAYS} days ({(self.today + dt.timedelta(days=HORIZON_DAYS))})"

    def to_json(self) -> dict[str, Any]:
        """`dojo plan --json`: exactly the fields docs/readiness.md lists."""
        return {
            "interview": None if self.plan is None else self.plan.interview.isoformat(),
            "days_left": self.days_left,
            "minutes_per_day": None if self.plan is None else self.plan.minutes,
            "new_per_day": self.new_per_day,
            "feasible": self.feasible,
            "reason": self.reason,
            "horizon": self.at.isoformat(),
            "topics": [{"topic": t.topic, "cards": t.cards, "introduced": t.introduced,
                        "recall_on_day": round(t.recall_on_day, 4),
                        "labs_passed": t.labs_passed, "labs_total": t.labs_total}
                       for t in self.topics],
            "table": [{"minutes_per_day": r.minutes, "mean_recall": round(r.mean_recall, 4),
                       "weakest_topic": None if r.weakest is None else r.weakest[0],
                       "weakest_recall": None if r.weakest is None else round(r.weakest[1], 4),
                       "answers": round(r.answers),
                       "lab_minutes_per_day": round(r.lab_minutes, 1)}
                      for r in self.table],
        }


@dataclass(frozen=True)
class Outline:
    """What readiness needs of the bank: the topics in study order, their titles and the lab
    levels each topic's questions link to. From the bank, or from its cached study index
    before the bank loads (the home screen's quick path)."""

    order: list[str]
    titles: dict[str, str]
    labs: dict[str, set[tuple[str, int]]]

    @classmethod
    def of(cls, study: Sequence[tuple[str, str]], titles: dict[str, str],
           links: Iterable[tuple[str, str, int]]) -> Outline:
        """From (question id, topic) in study order, the topics' titles and each question's
        (topic, exercise, level) lab link."""
        order = list(dict.fromkeys(topic for _, topic in study))
        labs: dict[str, set[tuple[str, int]]] = {}
        for topic, exercise, level in links:
            labs.setdefault(topic, set()).add((exercise, level))
        return cls(order, titles, labs)


def outline_of(bank: Bank) -> Outline:
    return Outline.of([(q.id, q.topic) for q in bank.study_order()],
                      {tid: t.title for tid, t in bank.topics.items()},
                      [(q.topic, q.lab.exercise, q.lab.level) for q in bank.questions
                       if q.lab is not None])


def new_plan(interview: dt.date, minutes: int) -> Plan:
    """A plan to an interview day with a daily study budget (`scheduler.plan.Plan`)."""
    from scheduler.plan import Plan

    return Plan(interview, minutes)


def parse_day(text: str) -> dt.date:
    """A plan's date typed as YYYY-MM-DD; ValueError names the bad part
    (`scheduler.plan.parse_day`)."""
    from scheduler.plan import parse_day as parse

    return parse(text)


def _budgets(minutes: int, need: int) -> list[int]:
    """A few daily budgets around the plan's: half, the plan's, 1.5x, 2x, and what fits."""
    out = {minutes, need}
    for factor in (0.5, 1.5, 2.0):
        out.add(max(5, 5 * round(minutes * factor / 5)))
    return sorted(b for b in out if b > 0)


def plan_report(store: Store, bank: Bank, now: dt.datetime | None = None, *,
                table: bool = False) -> PlanReport:
    """The plan (if any) with its pace and feasibility, and every topic's readiness: recall
    predicted for the interview day's start (without a plan: 7 study days ahead). `table`:
    the workload-vs-recall table too (a simulation per budget: `dojo plan`)."""
    from scheduler.readiness import FSRS_PARAMETERS_KEY

    cfg = store.settings()
    today = store.study_day(now, cfg)
    plan = store.plan()
    params = store.stored_value(FSRS_PARAMETERS_KEY)
    if plan is None:
        return readiness_report(cfg, today, store.cards(), params, store.lab_levels_passed(),
                                outline_of(bank))
    return planned_report(cfg, today, plan, store.cards(), params, store.lab_levels_passed(),
                          outline_of(bank), store.pace(), _cache_folder(store), table=table,
                          introduced_today=store.today_queue(now).introduced)


def _cache_folder(store: Store) -> Path | None:
    """Where the plan cache is kept: beside the database, unless the store only browses a
    read-only one (nothing is written beside it then)."""
    return store.path.parent if store.writable else None


def prepare_days_ahead(store: Store, bank: Bank, now: dt.datetime | None = None, *,
                       first: int = 1) -> int:
    """The plans of the study days `first` (0: today) to AHEAD_DAYS days after today, computed
    into the plan cache from the data as it stands (`scheduler.plan_cache`): a first start on
    one of those days reads its plan instead of simulating when nothing changed in between (a
    learner back the next day, or after a day or two away). Returns the days computed: 0 with
    no plan, a read-only store (nowhere to keep them) or once the interview is that close (a
    day on or after it is not computed)."""
    from scheduler.plan_cache import AHEAD_DAYS
    from scheduler.readiness import FSRS_PARAMETERS_KEY

    cfg = store.settings()
    today = store.study_day(now, cfg)
    plan = store.plan()
    folder = _cache_folder(store)
    if plan is None or folder is None:
        return 0
    days = [today + dt.timedelta(days=k) for k in range(first, AHEAD_DAYS + 1)]
    days = [day for day in days if day < plan.interview]
    if not days:
        return 0
    cards, params = store.cards(), store.stored_value(FSRS_PARAMETERS_KEY)
    passed, outline, pace = store.lab_levels_passed(), outline_of(bank), store.pace()
    introduced = store.today_queue(now).introduced if today in days else 0
    for day in days:
        planned_report(cfg, day, plan, cards, params, passed, outline, pace, folder,
                       introduced_today=introduced if day == today else 0)
    return len(days)


def planned_report(cfg: Settings, today: dt.date, plan: Plan, cards: Iterable[Card],
                   params: Any, passed: set[tuple[str, int]], outline: Outline, pace: Pace,
                   cache: Path | None, *, table: bool = False,
                   introduced_today: int = 0) -> PlanReport:
    """The report under a plan, from the cards (all of them: the retired and suspended are
    left out here), the stored FSRS weights, the lab levels passed and the learner's pace;
    the feasibility from the plan cache in the folder `cache` (`scheduler.plan_cache`: kept
    there, keyed by all of these) unless `table`. The store's path and the home screen's
    quick path (`scheduler.quick.quick_home`) both end here. `introduced_today`: the new cards
    introduced earlier on `today` (its queue's `introduced`), counted in today's pace."""
    from scheduler.days import resolve_timezone
    from scheduler.readiness import day_start

    at = day_start(plan.interview, cfg.rollover_hour, resolve_timezone(cfg.timezone))
    in_study = [c for c in cards if not c.retired and not c.suspended]
    topics, to_pass = _readiness(in_study, params, passed, outline, at)
    weakest_first = sorted(topics, key=lambda t: (t.recall_on_day, t.topic))
    return _with_plan(cfg, plan, today, at, in_study, params, pace, topics, to_pass,
                      weakest_first, cache, table, introduced_today)


def readiness_report(cfg: Settings, today: dt.date, cards: Iterable[Card], params: Any,
                     passed: set[tuple[str, int]], outline: Outline) -> PlanReport:
    """The report with no interview date set: every topic's recall HORIZON_DAYS ahead, from
    the cards (all of them: the retired and suspended are left out here), the stored FSRS
    weights `params` and the lab levels passed. The store's path and the home screen's
    quick path (`scheduler.quick.quick_home`) both end here."""
    from scheduler.days import resolve_timezone
    from scheduler.readiness import day_start

    at = day_start(today + dt.timedelta(days=HORIZON_DAYS), cfg.rollover_hour,
                   resolve_timezone(cfg.timezone))
    in_study = [c for c in cards if not c.retired and not c.suspended]
    topics, _ = _readiness(in_study, params, passed, outline, at)
    return PlanReport(None, today, at, None, None, None,
                      "no interview date set (dojo plan --interview YYYY-MM-DD)",
                      sorted(topics, key=lambda t: (t.recall_on_day, t.topic)))


def _readiness(cards: list[Card], params: Any, passed: set[tuple[str, int]], outline: Outline,
               at: dt.datetime) -> tuple[list[TopicReadiness], list[int]]:
    """Every topic's readiness at `at`, in study order, and the lab levels still to pass (a
    level linked from two topics counted once)."""
    from scheduler.fsrs_memory import make_scheduler
    from scheduler.fsrs_memory import recall as fsrs_recall
    from scheduler.readiness import topic_recall

    # Each card's stored FSRS memory is the time-ordered replay of its answers
    # (docs/readiness.md): read it instead of replaying the whole log again.
    fsrs = make_scheduler(params)
    recall = {c.question_id: fsrs_recall(c.memory, at, fsrs) for c in cards
              if c.memory is not None}
    order = list(outline.order)
    order += sorted({c.topic for c in cards} - set(order))
    by_topic: dict[str, list[str]] = {t: [] for t in order}
    for c in cards:
        by_topic[c.topic].append(c.question_id)
    introduced = {c.question_id for c in cards if not c.is_new}
    recall_by_topic = topic_recall(by_topic, introduced, recall)
    labs = {t: set(outline.labs.get(t, ())) for t in order}
    topics = [
        TopicReadiness(
            topic=t, title=outline.titles.get(t, t),
            cards=len(ids), introduced=sum(q in introduced for q in ids),
            recall_on_day=recall_by_topic[t],
            labs_passed=len(labs[t] & passed), labs_total=len(labs[t]))
        for t, ids in by_topic.items() if ids or labs[t]
    ]
    to_pass: list[int] = []
    counted: set[tuple[str, int]] = set()  # a level linked from two topics is passed once
    for t in topics:  # study order
        levels = labs[t.topic] - passed - counted
        counted |= levels
        to_pass += [level for _, level in sorted(levels)]
    return topics, to_pass


def _with_plan(cfg: Settings, plan: Plan, today: dt.date, at: dt.datetime, cards: list[Card],
               params: Any, pace: Pace, topics: list[TopicReadiness], to_pass: list[int],
               weakest_first: list[TopicReadiness], cache: Path | None,
               table: bool, introduced_today: int) -> PlanReport:
    """The report under a plan: the learner's pace, the plan's feasibility and (`table`) the
    workload-vs-recall rows, "no further study" first."""
    from scheduler.days import resolve_timezone
    from scheduler.feasibility import BudgetRow, feasibility
    from scheduler.plan_cache import plan_feasibility
    from scheduler.readiness import day_start
    from scheduler.simulate import SimCard
    from trainer import __version__

    sim_cards = [SimCard(c.question_id, c.topic, c.scheduled, c.memory) for c in cards]
    if not table:
        fit = plan_feasibility(cache, plan, today, sim_cards, pace, cfg, params, to_pass,
                               __version__, introduced_today=introduced_today)
        return PlanReport(plan, today, at, (plan.interview - today).days, fit.new_per_day,
                          fit.feasible, fit.reason, weakest_first)
    tz = resolve_timezone(cfg.timezone)

    def start(day: dt.date) -> dt.datetime:
        return day_start(day, cfg.rollover_hour, tz)

    fit = feasibility(plan, today, sim_cards, pace, start, cfg, params, to_pass,
                      introduced_today=introduced_today)
    # What the home shows of it, kept for the app's next start (no second simulation).
    plan_feasibility(cache, plan, today, sim_cards, pace, cfg, params, to_pass, __version__,
                     computed=fit, introduced_today=introduced_today)
    rows: tuple[BudgetRow, ...] = ()
    if fit.forecast is not None:
        budgets = _budgets(plan.minutes, 5 * math.ceil(fit.need_minutes / 5))
        fit = feasibility(plan, today, sim_cards, pace, start, cfg, params, to_pass, budgets,
                          introduced_today=introduced_today)
        share = {t.topic: t.recall_on_day * t.introduced / t.cards for t in topics if t.cards}
        low = min(share, key=lambda t: (share[t], t), default=None)
        rows = (BudgetRow(None, sum(share.values()) / len(share) if share else 0.0,
                          None if low is None else (low, share[low]), 0.0), *fit.table)
    return PlanReport(plan, today, at, (plan.interview - today).days, fit.new_per_day,
                      fit.feasible, fit.reason, weakest_first, rows)


def recall_bar(fraction: float, width: int = 10) -> str:
    """A plain bar for a recall share (0..1)."""
    full = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * full + "░" * (width - full)


def table_lines(report: PlanReport) -> list[str]:
    """The workload-vs-recall table: recall on the interview day (mean over topics, and the
    weakest topic) for no further study and for a few daily budgets followed exactly."""
    if not report.table:
        return []
    labs = max(r.lab_minutes for r in report.table)
    share = f"about {labs:.0f} min" if labs else "their share"
    out = [f"If followed (lab levels take {share} of each budget first; a card not yet "
           "introduced counts as forgotten): min/day, answers, recall on the day (mean · "
           "weakest topic)"]
    for r in report.table:
        label = "no more study" if r.minutes is None else f"{r.minutes:>4} min/day"
        if r.labs_take_all:  # not "0 answers, 0%": the budget never reaches the cards
            out.append(f"  {label:<14} labs alone take {r.lab_minutes:.0f} min/day: "
                       "no time left for cards")
            continue
        weakest = "" if r.weakest is None else f" · {r.weakest[1]:.0%} {r.weakest[0]}"
        out.append(f"  {label:<14} {r.answers:>7.0f}   {r.mean_recall:>4.0%}{weakest}")
    return out


def plan_lines(report: PlanReport, width: int = 80, limit: int | None = None) -> list[str]:
    """Plain-text lines: the plan headline, then one line a topic (weakest first): a recall
    bar, the share, the title, the cards begun (answered at least once) of the topic's and the
    lab levels passed, fitted to `width`."""
    from questions.wording import plural

    lines = []
    if report.plan is None:
        lines.append("No interview date set (p on Today, or dojo plan --interview DATE).")
        lines.append(f"Recall {report.horizon}, weakest first (labs = levels passed):")
    else:
        left = report.days_left or 0
        when = (f"{plural(left, 'day')} left" if left > 0 else "today" if left == 0
                else f"{plural(-left, 'day')} ago")
        verdict = "on track" if report.feasible else "does not fit"
        lines.append(
            f"Interview {report.plan.interview} · {when} · "
            f"{report.plan.minutes} min/day · {report.new_per_day} new/day · {verdict}")
        lines.append(report.reason)
        lines += table_lines(report)
        lines.append("Recall on the day, weakest first (labs = levels passed):")
    import textwrap

    lines = [part for line in lines for part in textwrap.wrap(line, width) or [""]]
    shown = report.topics if limit is None else report.topics[:limit]
    bar = 10 if width >= 70 else 6
    begun = {t.topic: f"{t.introduced}/{t.cards}" for t in shown}  # answered at least once
    wide = max((len(b) for b in begun.values()), default=0)
    for t in shown:
        tail = f" {begun[t.topic]:>{wide}} cards begun · labs {t.labs_passed}/{t.labs_total}"
        room = max(8, width - bar - 6 - len(tail))
        title = t.title if len(t.title) <= room else t.title[:room - 1] + "…"
        lines.append(f"{recall_bar(t.recall_on_day, bar)} {t.recall_on_day:>4.0%} "
                     f"{title:<{room}}{tail}")
    if limit is not None and len(report.topics) > limit:
        lines.append(f"… and {len(report.topics) - limit} more (Stats, or dojo plan)")
    return lines
