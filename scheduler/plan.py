"""A plan to the interview day: the pace of new cards, whether it fits the daily time budget,
and where each topic will stand on the day.

With a plan, the daily new-card limit is replaced by the pace that introduces every remaining
new card by INTRO_LEAD_DAYS days before the interview (the last week is for review and a mock
round). The time a day takes is estimated from the learner's own answers (median response time,
share of answers that send a card to re-drill), projecting each new card's first answer and its
SM-2 follow-ups (after 1, 7 and 22 days at grade 4) plus the reviews already scheduled, plus
the lab levels still to pass (the learner's median recorded time to pass a level, else
DEFAULT_LAB_LEVEL_S each) spread over the same days; the plan is feasible when the busiest day
fits the budget. Pure functions over plain data: the caller
(trainer.core.plan) brings the bank's topics and lab links.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

INTRO_LEAD_DAYS = 7  # every card introduced at least this many days before the interview
FOLLOW_UPS = (1, 7, 22)  # days after its first answer a new card comes back (SM-2, grade 4)
DEFAULT_ANSWER_S = 30.0  # before the learner has answered anything
DEFAULT_REDRILL_SHARE = 0.3  # share of scheduled answers graded below 4, before any
DEFAULT_LAB_LEVEL_S = 45 * 60.0  # a lab level to pass, before any timed pass: one rehearsal
PLAN_KEY = "plan"  # settings-table key: {"interview": "YYYY-MM-DD", "minutes": N}


@dataclass(frozen=True)
class Plan:
    interview: dt.date
    minutes: int  # the learner's daily time budget

    def to_json(self) -> dict[str, Any]:
        return {"interview": self.interview.isoformat(), "minutes": self.minutes}

    @classmethod
    def from_json(cls, value: Any) -> Plan | None:
        """The stored plan, or None when absent or unreadable."""
        try:
            return cls(dt.date.fromisoformat(value["interview"]), int(value["minutes"]))
        except (TypeError, KeyError, ValueError):
            return None

    def intro_deadline(self) -> dt.date:
        """The last day a new card may be introduced."""
        return self.interview - dt.timedelta(days=INTRO_LEAD_DAYS)


def intro_days(plan: Plan, today: dt.date) -> int:
    """Study days left for introducing new cards, today included (0 once the window closed)."""
    return max(0, (plan.intro_deadline() - today).days + 1)


def paced_new_limit(plan: Plan, today: dt.date, new_at_day_start: int) -> int | None:
    """Today's new-card limit under the plan: the day's share of the cards still new at the
    start of the day; 0 in the last INTRO_LEAD_DAYS days (review and a mock round). None once
    the interview day has passed: the usual limit applies again."""
    if today > plan.interview:
        return None
    days = intro_days(plan, today)
    return math.ceil(new_at_day_start / days) if days else 0


@dataclass(frozen=True)
class Pace:
    """The learner's own speed: seconds per answer, the share sent to re-drill, and seconds
    to pass a lab level."""

    answer_s: float
    redrill_share: float
    lab_level_s: float = DEFAULT_LAB_LEVEL_S

    @classmethod
    def from_answers(cls, reviews: Sequence[Mapping[str, Any]],
                     pass_seconds: Iterable[float | None] = ()) -> Pace:
        """From exported answer rows and the recorded times to pass lab levels (lab cards'
        `last_pass_s`); the defaults before there are any."""
        times = [int(r["response_ms"]) for r in reviews if int(r["response_ms"]) > 0]
        scheduled = [r for r in reviews if r["mode"] == "review"]
        passes = [float(x) for x in pass_seconds if x is not None and x > 0]
        return cls(
            answer_s=statistics.median(times) / 1000 if times else DEFAULT_ANSWER_S,
            redrill_share=(sum(int(r["quality"]) < 4 for r in scheduled) / len(scheduled)
                           if scheduled else DEFAULT_REDRILL_SHARE),
            lab_level_s=statistics.median(passes) if passes else DEFAULT_LAB_LEVEL_S,
        )


def daily_minutes(
    new_cards: int, days: int, horizon: int, due_offsets: Iterable[int], pace: Pace,
    lab_levels: int = 0,
) -> list[float]:
    """Estimated minutes for each of `horizon` days: `new_cards` introduced evenly over the
    first `days` days, their follow-ups, the reviews already due (offsets from today; overdue
    counts today), every answer plus its expected re-drills at the learner's speed; and
    `lab_levels` to pass, their time spread evenly over the same first `days` days (over every
    day left once no day introduces cards)."""
    load = [0.0] * max(horizon, 1)
    for offset in due_offsets:
        if offset < len(load):
            load[max(0, offset)] += 1
    per_day = math.ceil(new_cards / days) if days > 0 and new_cards > 0 else 0
    left = new_cards
    for day in range(min(days, len(load))):
        k = min(per_day, left)
        left -= k
        for step in (0, *FOLLOW_UPS):
            if day + step < len(load):
                load[day + step] += k
    minutes = [n * (1 + pace.redrill_share) * pace.answer_s / 60 for n in load]
    if lab_levels > 0:
        spread = min(days, len(minutes)) if days > 0 else len(minutes)
        for day in range(spread):
            minutes[day] += lab_levels * pace.lab_level_s / 60 / spread
    return minutes


@dataclass(frozen=True)
class Feasibility:
    feasible: bool
    reason: str
    need_minutes: int  # the busiest day, rounded up
    new_per_day: int


def feasibility(
    plan: Plan, today: dt.date, new_by_topic: Sequence[tuple[str, int]],
    due_offsets: Sequence[int], pace: Pace, labs_by_topic: Mapping[str, int] | None = None,
) -> Feasibility:
    """Whether the plan fits: every new card (`new_by_topic`, in study order) introduced by the
    deadline and every lab level still to pass (`labs_by_topic`: how many per topic) passed
    by then, the busiest day within the budget; if not, why, and what would fit."""
    labs = dict(labs_by_topic or {})
    days_left = (plan.interview - today).days
    remaining = sum(n for _, n in new_by_topic)
    days = intro_days(plan, today)
    horizon = max(days_left, 1)

    levels = sum(labs.get(t, 0) for t, _ in new_by_topic)
    lab_note = (f", {levels} lab level{'s' if levels != 1 else ''} at "
                f"{pace.lab_level_s / 60:.0f} min each" if levels else "")

    def need(cards: int, lab_levels: int) -> float:
        return max(daily_minutes(cards, days, horizon, due_offsets, pace, lab_levels))

    if days_left < 0:
        return Feasibility(False, f"the interview day ({plan.interview}) has passed", 0, 0)
    new_per_day = math.ceil(remaining / days) if days else 0
    if remaining and not days:
        return Feasibility(
            False,
            f"the interview is in {days_left} days and {remaining} cards are still new: new "
            f"cards are introduced at least {INTRO_LEAD_DAYS} days before it, so these will not "
            "be; review what you know and drill the weakest topics",
            math.ceil(need(0, 0)), 0)
    peak = math.ceil(need(remaining, levels))
    if peak <= plan.minutes:
        return Feasibility(
            True,
            f"about {peak} min/day of your {plan.minutes} (at {pace.answer_s:.0f} s an answer"
            f"{lab_note}): "
            f"every card introduced by {plan.intro_deadline()}, then {INTRO_LEAD_DAYS} days for "
            "review and a mock round",
            peak, new_per_day)
    fits = 0
    total = total_labs = 0
    for topic, n in new_by_topic:
        total += n
        total_labs += labs.get(topic, 0)
        if need(total, total_labs) > plan.minutes:
            break
        fits += 1
    topics = len(new_by_topic)
    enough = 5 * math.ceil(peak / 5)
    return Feasibility(
        False,
        f"about {peak} min/day needed (at {pace.answer_s:.0f} s an answer{lab_note}): at "
        f"{plan.minutes} min/day: {fits} of {topics} topics; at {enough} min/day: all",
        peak, new_per_day)
