"""A plan to the interview day: the pace of new cards, what following it costs each day, and
where each topic will stand on the day.

With a plan, the daily new-card limit is replaced by the pace that introduces every remaining
new card by INTRO_LEAD_DAYS days before the interview (that day included; the days after it are
for review and a mock round). What a day costs is a forward simulation of the learner's own
memory model (`scheduler.simulate`): their FSRS parameters, seconds per answer, first-answer
accuracy, the pace, re-drills after a miss and the reviews already scheduled; plus the lab
levels still to pass, each at a per-level estimate (`lab_level_minutes`), spread over the days
that introduce new cards. The plan is feasible when the busiest day fits the budget.
Pure functions over plain data: the caller (trainer.core.plan) brings the bank's topics and lab
links.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scheduler.simulate import Forecast, Learner, SimCard, simulate

if TYPE_CHECKING:
    from scheduler.records import Settings

INTRO_LEAD_DAYS = 7  # every card introduced at least this many days before the interview
DEFAULT_ANSWER_S = 30.0  # before the learner has answered anything
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
    start of the day, `ceil(new / study days left up to the deadline, today included)`, where
    the deadline is INTRO_LEAD_DAYS days before the interview (it introduces too); 0 after it
    (review and a mock round). None once the interview day has passed: the usual limit
    applies again."""
    if today > plan.interview:
        return None
    days = intro_days(plan, today)
    return math.ceil(new_at_day_start / days) if days else 0


DEFAULT_LEVEL_MINUTES = {1: 30.0, 2: 45.0, 3: 60.0}  # a lab level to pass, before any pass
DEFAULT_DEEPER_LEVEL_MINUTES = 60.0  # levels 4 and up
MIN_TIMED_PASS_S = 60.0  # a quicker pass was not built from a blank stub: not a timing
LAB_FACTOR_RANGE = (0.5, 3.0)  # the learner's speed against the defaults, clamped


def default_level_minutes(level: int) -> float:
    """The stated default time to pass a lab level (docs/readiness.md)."""
    return DEFAULT_LEVEL_MINUTES.get(level, DEFAULT_DEEPER_LEVEL_MINUTES)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True)
class Pace:
    """The learner's own speed: seconds per answer, the share of new cards answered right the
    first time, and how their timed lab passes compare with the per-level defaults."""

    answer_s: float = DEFAULT_ANSWER_S
    first_right: float = 0.6
    lab_factor: float = 1.0  # 1.0: the defaults; 0.5: twice as fast
    lab_timed: int = 0  # timed passes the factor comes from

    @classmethod
    def from_answers(cls, reviews: Sequence[Mapping[str, Any]],
                     passes: Iterable[tuple[int, float | None]] = ()) -> Pace:
        """From exported answer rows and the lab cards' (level, seconds of the latest timed
        pass); the defaults before there are any. Passes under MIN_TIMED_PASS_S are left out."""
        times = [int(r["response_ms"]) for r in reviews if int(r["response_ms"]) > 0]
        first = [int(r["quality"]) >= 3 for r in reviews
                 if r["mode"] == "review" and r["before"]["due"] is None]
        ratios = [s / 60 / default_level_minutes(level) for level, s in passes
                  if s is not None and s >= MIN_TIMED_PASS_S]
        low, high = LAB_FACTOR_RANGE
        return cls(
            answer_s=statistics.median(times) / 1000 if times else DEFAULT_ANSWER_S,
            first_right=sum(first) / len(first) if first else 0.6,
            lab_factor=min(high, max(low, statistics.median(ratios))) if ratios else 1.0,
            lab_timed=len(ratios),
        )

    def lab_level_minutes(self, level: int) -> float:
        """Minutes to pass a lab level: the default for the level times the learner's factor
        (never 0)."""
        return default_level_minutes(level) * self.lab_factor


@dataclass(frozen=True)
class BudgetRow:
    """One row of the workload-vs-recall table."""

    minutes: int | None  # the daily budget; None: no further study
    mean_recall: float  # mean over topics of the share of cards recalled on the day (new: 0)
    weakest: tuple[str, float] | None  # the weakest topic and its share
    answers: float  # answers until the interview


@dataclass(frozen=True)
class Feasibility:
    feasible: bool
    reason: str
    need_minutes: int  # the busiest day, rounded up
    new_per_day: int
    forecast: Forecast | None = None  # following the plan without a budget
    table: tuple[BudgetRow, ...] = ()


def _fmt_min(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}".rstrip("0").rstrip(".")


def feasibility(
    plan: Plan, today: dt.date, cards: Sequence[SimCard], pace: Pace,
    day_start: Callable[[dt.date], dt.datetime], settings: Settings,
    parameters: Sequence[float] | None = None, lab_levels: Sequence[int] = (),
    budgets: Sequence[int] = (), runs: int = 3,
) -> Feasibility:
    """Whether the plan fits: the busiest day of the simulated plan (`scheduler.simulate`)
    within the budget, the lab levels still to pass (`lab_levels`: the level number of each)
    included; why, and, with `budgets`, the workload-vs-recall table."""
    days_left = (plan.interview - today).days
    if days_left < 0:
        return Feasibility(False, f"the interview day ({plan.interview}) has passed", 0, 0)
    remaining = sum(1 for c in cards if c.scheduled.due is None)
    days = intro_days(plan, today)
    new_per_day = math.ceil(remaining / days) if days else 0
    lab_total = sum(pace.lab_level_minutes(level) for level in lab_levels)
    learner = Learner(pace.answer_s, pace.first_right)

    def run(budget: float | None) -> Forecast:
        return simulate(cards, plan, today, day_start, settings, parameters, learner,
                        lab_total, budget, runs=runs)

    forecast = run(None)
    peak = math.ceil(max(forecast.minutes, default=0.0) - 1e-9)
    levels = len(lab_levels)
    lab_note = ""
    if levels:
        spread = max(1, round(forecast.intro_days)) if forecast.intro_days else max(days_left, 1)
        each = " / ".join(f"L{n} {_fmt_min(pace.lab_level_minutes(n))}"
                          for n in sorted(set(lab_levels)))
        lab_note = (f"; {_plural(levels, 'lab level')}, about {lab_total:.0f} min in all "
                    f"({'at your pace' if pace.lab_timed else 'stated defaults'}: {each} min "
                    f"each), spread over {_plural(spread, 'day')}")
    total = sum(forecast.answers)
    cost = (f"about {total:.0f} answers at {pace.answer_s:.0f} s (re-drills included)"
            f"{lab_note}")
    table = tuple(_row(b, run(max(0.0, b - lab_total / max(forecast.intro_days, 1))))
                  for b in budgets)
    if remaining and not days:
        return Feasibility(
            False,
            f"the interview is in {_plural(days_left, 'day')} and "
            f"{_plural(remaining, 'card')} {'is' if remaining == 1 else 'are'} still new: new "
            f"cards are introduced at least {INTRO_LEAD_DAYS} days before it, so these will "
            "not be; review what you know and drill the weakest topics",
            peak, 0, forecast, table)
    if peak <= plan.minutes:
        return Feasibility(
            True,
            f"busiest day about {peak} min of your {plan.minutes}: {cost}; every card "
            f"introduced by {plan.intro_deadline()}, then review and a mock round",
            peak, new_per_day, forecast, table)
    enough = 5 * math.ceil(peak / 5)
    return Feasibility(
        False,
        f"the busiest day needs about {peak} min: {cost}; at {enough} min/day it fits "
        "(the table of budgets shows the recall each leads to)",
        peak, new_per_day, forecast, table)


def _row(budget: int, forecast: Forecast) -> BudgetRow:
    return BudgetRow(budget, forecast.mean_share, forecast.weakest_share,
                     sum(forecast.answers))
