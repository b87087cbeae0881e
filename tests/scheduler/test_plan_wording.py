"""The plan's reason says which figures are the busiest day's and which are the whole plan's."""

from __future__ import annotations

import datetime as dt

from scheduler.feasibility import feasibility
from scheduler.plan import Pace, Plan
from tests.scheduler.test_plan import D0, UTC, _new_cards, _start


def test_the_answers_counted_are_the_whole_plans_not_the_busiest_days() -> None:
    """A walkthrough read "the busiest day needs about 67 min: about 1850 answers at 6 s" as
    1850 answers on one 67-minute day; the count is every answer up to the interview."""
    plan = Plan(D0 + dt.timedelta(days=21), 5)
    fit = feasibility(plan, D0, _new_cards(1, 2), Pace.from_answers([]), _start, UTC,
                      lab_levels=[1, 2, 2], runs=1)
    assert fit.forecast is not None
    total = sum(fit.forecast.answers)
    assert f"about {total:.0f} answers in all at " in fit.reason, fit.reason
    assert fit.reason.startswith(f"the busiest day needs about {fit.need_minutes} min; "), \
        fit.reason
