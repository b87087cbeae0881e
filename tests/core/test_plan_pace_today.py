"""The plan's pace is today's new-card limit, whatever was introduced earlier today.

Today's limit counts the cards new at the day's start (`scheduler.queue`); the plan's line and
its simulation counted only the cards still new, so after two introductions on the real bank
the plan said one fewer new/day than Today allowed, and its simulated first day introduced the
whole day's share again (a new user saw '16 new/day' beside a limit of 17)."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from scheduler.plan import Plan, intro_days, paced_new_limit
from scheduler.readiness import day_start
from scheduler.simulate import Learner, SimCard, simulate
from trainer.core.plan import plan_report
from trainer.core.services import Services
from trainer.core.views import quick_today_view

START = dt.datetime(2026, 9, 1, 9, 0, tzinfo=dt.UTC)
EARLIER = 2  # new cards answered before the plan is looked at


def _pin(monkeypatch: pytest.MonkeyPatch, moment: dt.datetime) -> None:
    monkeypatch.setenv("DOJO_NOW", moment.replace(tzinfo=None).isoformat())


@pytest.mark.slow
def test_the_plans_pace_and_first_day_follow_todays_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _pin(monkeypatch, START)
    services = Services.open(now=START)
    store = services.store
    store.update_settings(timezone="UTC")
    today = START.date()
    new = sum(1 for c in store.cards() if c.is_new and not c.suspended and not c.retired)
    # an interview date where the day's share of the cards new at its start (the limit) and
    # of those still new after EARLIER introductions differ
    plan = next(p for p in (Plan(today + dt.timedelta(days=k), 600) for k in range(9, 90))
                if math.ceil(new / intro_days(p, today))
                != math.ceil((new - EARLIER) / intro_days(p, today)))
    store.set_plan(plan)
    limit = paced_new_limit(plan, today, new)
    assert limit is not None and len(store.today_queue(START).new) == limit
    for n, item in enumerate(store.today_queue(START).new[:EARLIER]):
        store.answer(item.question_id, 4, correct=True, answer_text="x", response_ms=9000,
                     now=START + dt.timedelta(minutes=n))
    later = START + dt.timedelta(minutes=10)
    queue = store.today_queue(later)
    assert queue.introduced == EARLIER and len(queue.new) == limit - EARLIER

    report = plan_report(store, services.bank, later)
    assert report.new_per_day == limit  # the store's path ('dojo plan', the plan screen)

    # the simulated first day introduces what Today still offers, not a whole share again
    cfg = store.settings()
    cards = [SimCard(c.question_id, c.topic, c.scheduled, c.memory) for c in store.cards()
             if not c.suspended and not c.retired]
    forecast = simulate(cards, plan, today, lambda d: day_start(d, cfg.rollover_hour, dt.UTC),
                        cfg, None, Learner(9.0, first_right=1.0), runs=1,
                        introduced_today=queue.introduced)
    assert forecast.answers[0] == len(queue.reviews) + len(queue.new)
    services.close()

    _pin(monkeypatch, later)  # the home's quick path says the same
    view = quick_today_view()
    assert view is not None and view.plan is not None and view.plan.new_per_day == limit
