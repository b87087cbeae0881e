"""The plan to the interview day and per-topic readiness, from the store and the bank: what
`dojo plan`, Today and Stats show (scheduler.plan and scheduler.readiness do the arithmetic)."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from questions.bank import Bank
    from scheduler.plan import Plan
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


@dataclass(frozen=True)
class PlanReport:
    plan: Plan | None
    today: dt.date
    at: dt.datetime  # the moment recall is predicted for: the interview day's start, or now
    days_left: int | None
    new_per_day: int | None
    feasible: bool | None
    reason: str
    topics: list[TopicReadiness]  # weakest first

    def to_json(self) -> dict[str, Any]:
        """`dojo plan --json`: exactly the fields the issue lists."""
        return {
            "interview": None if self.plan is None else self.plan.interview.isoformat(),
            "days_left": self.days_left,
            "minutes_per_day": None if self.plan is None else self.plan.minutes,
            "new_per_day": self.new_per_day,
            "feasible": self.feasible,
            "reason": self.reason,
            "topics": [{"topic": t.topic, "cards": t.cards, "introduced": t.introduced,
                        "recall_on_day": round(t.recall_on_day, 4),
                        "labs_passed": t.labs_passed, "labs_total": t.labs_total}
                       for t in self.topics],
        }


def _topic_order(bank: Bank) -> list[str]:
    order: list[str] = []
    for q in bank.study_order():
        if q.topic not in order:
            order.append(q.topic)
    return order


def new_plan(interview: dt.date, minutes: int) -> Plan:
    """A plan to an interview day with a daily study budget (`scheduler.plan.Plan`)."""
    from scheduler.plan import Plan

    return Plan(interview, minutes)


def plan_report(store: Store, bank: Bank, now: dt.datetime | None = None) -> PlanReport:
    """The plan (if any) with its pace and feasibility, and every topic's readiness: recall
    predicted for the interview day's start (without a plan: for now)."""
    from scheduler.days import resolve_timezone, utc_now
    from scheduler.plan import Pace, feasibility
    from scheduler.readiness import (
        FSRS_PARAMETERS_KEY,
        answers_by_card,
        card_recall,
        day_start,
        topic_recall,
    )

    cfg = store.settings()
    today = store.study_day(now, cfg)
    plan = store.plan()
    at = (day_start(plan.interview, cfg.rollover_hour, resolve_timezone(cfg.timezone))
          if plan is not None else (now or utc_now()).astimezone(dt.UTC))
    cards = [c for c in store.cards() if not c.retired and not c.suspended]
    reviews = store.export_history()["reviews"]
    params = store.stored_value(FSRS_PARAMETERS_KEY)
    recall = card_recall(answers_by_card(reviews), at, params)
    order = _topic_order(bank)
    order += sorted({c.topic for c in cards} - set(order))
    by_topic: dict[str, list[str]] = {t: [] for t in order}
    for c in cards:
        by_topic[c.topic].append(c.question_id)
    introduced = {c.question_id for c in cards if not c.is_new}
    recall_by_topic = topic_recall(by_topic, introduced, recall)
    passed = store.lab_levels_passed()
    labs: dict[str, set[tuple[str, int]]] = {t: set() for t in order}
    for q in bank.questions:
        if q.topic in labs and q.lab is not None:
            labs[q.topic].add((q.lab.exercise, q.lab.level))
    topics = [
        TopicReadiness(
            topic=t, title=bank.topics[t].title if t in bank.topics else t,
            cards=len(ids), introduced=sum(q in introduced for q in ids),
            recall_on_day=recall_by_topic[t],
            labs_passed=len(labs[t] & passed), labs_total=len(labs[t]))
        for t, ids in by_topic.items() if ids or labs[t]
    ]
    weakest = sorted(topics, key=lambda t: (t.recall_on_day, t.topic))
    if plan is None:
        return PlanReport(None, today, at, None, None, None,
                          "no interview date set (dojo plan --interview YYYY-MM-DD)", weakest)
    due_offsets: list[int] = []
    for c in cards:
        if c.due is not None:
            first = (c.due - today).days
            due_offsets += [max(0, first),
                            max(0, first) + max(1, math.ceil(c.interval * float(c.ef)))]
    to_pass: dict[str, int] = {}
    counted: set[tuple[str, int]] = set()  # a level linked from two topics is passed once
    for t in topics:  # study order
        levels = labs[t.topic] - passed - counted
        counted |= levels
        to_pass[t.topic] = len(levels)
    pace = Pace.from_answers(reviews, (c.last_pass_s for c in store.lab_cards()))
    fit = feasibility(plan, today, [(t.topic, t.cards - t.introduced) for t in topics],
                      due_offsets, pace, to_pass)
    return PlanReport(plan, today, at, (plan.interview - today).days, fit.new_per_day,
                      fit.feasible, fit.reason, weakest)


def recall_bar(fraction: float, width: int = 10) -> str:
    """A plain bar for a recall share (0..1)."""
    full = round(max(0.0, min(1.0, fraction)) * width)
    return "█" * full + "░" * (width - full)


def plan_lines(report: PlanReport, width: int = 80, limit: int | None = None) -> list[str]:
    """Plain-text lines: the plan headline, then one line a topic (weakest first): a recall
    bar, the share, the title, cards introduced and labs passed, fitted to `width`."""
    from questions.wording import plural

    lines = []
    if report.plan is None:
        lines.append("No interview date set (p on Today, or dojo plan --interview DATE).")
        lines.append("Recall now, weakest first (labs passed):")
    else:
        verdict = "on track" if report.feasible else "does not fit"
        lines.append(
            f"Interview {report.plan.interview} · {plural(report.days_left or 0, 'day')} left · "
            f"{report.plan.minutes} min/day · {report.new_per_day} new/day · {verdict}")
        lines.append(report.reason)
        lines.append("Recall on the day, weakest first (labs passed):")
    import textwrap

    lines = [part for line in lines for part in textwrap.wrap(line, width) or [""]]
    shown = report.topics if limit is None else report.topics[:limit]
    bar = 10 if width >= 70 else 6
    for t in shown:
        tail = (f" {t.introduced:>3}/{t.cards:<3} in · labs "
                f"{t.labs_passed}/{t.labs_total}")
        room = max(8, width - bar - 6 - len(tail))
        title = t.title if len(t.title) <= room else t.title[:room - 1] + "…"
        lines.append(f"{recall_bar(t.recall_on_day, bar)} {t.recall_on_day:>4.0%} "
                     f"{title:<{room}}{tail}")
    if limit is not None and len(report.topics) > limit:
        lines.append(f"… and {len(report.topics) - limit} more (Stats, or dojo plan)")
    return lines
