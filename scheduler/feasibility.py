"""Whether a plan fits the learner's daily budget: the plan followed in a forward simulation
(`scheduler.simulate`), the lab levels still to pass added at the learner's pace, the busiest
day against the budget, and the workload-vs-recall table for other budgets. Apart from
`scheduler.plan` so that the plan's pace (which the simulation follows) does not import the
simulation back."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scheduler.plan import INTRO_LEAD_DAYS, Pace, Plan, intro_days, paced_new_limit
from scheduler.simulate import Forecast, Learner, SimCard, simulate

if TYPE_CHECKING:
    from scheduler.records import Settings


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True)
class BudgetRow:
    """One row of the workload-vs-recall table."""

    minutes: int | None  # the daily budget; None: no further study
    mean_recall: float  # mean over topics of the share of cards recalled on the day (new: 0)
    weakest: tuple[str, float] | None  # the weakest topic and its share
    answers: float  # answers until the interview
    lab_minutes: float = 0.0  # the labs' share of each budgeted day, taken before any card

    @property
    def labs_take_all(self) -> bool:
        """The labs' share fills the budget: no card is answered, so its recall is the
        no-study one whatever the budget (a row the table says in words, not as 0 answers)."""
        return self.minutes is not None and self.lab_minutes >= self.minutes


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
    budgets: Sequence[int] = (), runs: int = 3, introduced_today: int = 0,
) -> Feasibility:
    """Whether the plan fits: the busiest day of the simulated plan (`scheduler.simulate`)
    within the budget, the lab levels still to pass (`lab_levels`: the level number of each)
    included; why, and, with `budgets`, the workload-vs-recall table. `introduced_today`: new
    cards introduced earlier today; the pace shown is today's limit, as the queue counts it
    (the cards new at the day's start over the days left to introduce them)."""
    days_left = (plan.interview - today).days
    if days_left < 0:
        return Feasibility(False, f"the interview day ({plan.interview}) has passed", 0, 0)
    remaining = sum(1 for c in cards if c.scheduled.due is None)
    days = intro_days(plan, today)
    new_per_day = paced_new_limit(plan, today, remaining + introduced_today) or 0
    lab_total = sum(pace.lab_level_minutes(level) for level in lab_levels)
    learner = Learner(pace.answer_s, pace.first_right)

    def run(budget: float | None) -> Forecast:
        return simulate(cards, plan, today, day_start, settings, parameters, learner,
                        lab_total, budget, runs=runs, introduced_today=introduced_today)

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
    # "in all": the whole plan's, not the busiest day's (a reader took 1850 answers for a day's)
    cost = (f"about {total:.0f} answers in all at {pace.answer_s:.0f} s each (re-drills included)"
            f"{lab_note}")
    lab_day = lab_total / max(forecast.intro_days, 1)  # each budgeted day's lab share
    table = tuple(_row(b, run(max(0.0, b - lab_day)), lab_day) for b in budgets)
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
            f"busiest day about {peak} min of your {plan.minutes}; {cost}; every card "
            f"introduced by {plan.intro_deadline()}, then review and a mock round",
            peak, new_per_day, forecast, table)
    enough = 5 * math.ceil(peak / 5)
    return Feasibility(
        False,
        f"the busiest day needs about {peak} min; {cost}; at {enough} min/day it fits "
        "(the table of budgets shows the recall each leads to)",
        peak, new_per_day, forecast, table)


def _row(budget: int, forecast: Forecast, lab_minutes: float) -> BudgetRow:
    return BudgetRow(budget, forecast.mean_share, forecast.weakest_share,
                     sum(forecast.answers), lab_minutes)
