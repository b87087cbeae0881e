"""A plan to the interview day (issue #32): the pace replaces the new-card limit, and the plan
says whether the learner's own speed fits the daily budget."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from scheduler.plan import Pace, Plan, feasibility, paced_new_limit
from scheduler.store import Store
from trainer.cli import main
from trainer.core.bank import load_study_bank, sync_bank

D0 = dt.date(2026, 12, 1)


def test_the_pace_introduces_everything_a_week_before_and_nothing_after() -> None:
    plan = Plan(D0 + dt.timedelta(days=21), 30)
    assert paced_new_limit(plan, D0, 290) == 20  # 290 over the 15 days to D0+14
    assert paced_new_limit(plan, D0 + dt.timedelta(days=14), 3) == 3  # the last day
    assert paced_new_limit(plan, D0 + dt.timedelta(days=15), 3) == 0  # the review week
    assert paced_new_limit(plan, D0 + dt.timedelta(days=22), 3) is None  # plan is over


def test_an_infeasible_budget_says_what_would_fit() -> None:
    plan = Plan(D0 + dt.timedelta(days=21), 30)
    topics = [(f"t{i}", 12) for i in range(24)]
    fit = feasibility(plan, D0, topics, [], Pace(answer_s=30, redrill_share=0.3))
    assert not fit.feasible
    assert "at 30 min/day: " in fit.reason and " of 24 topics; at " in fit.reason
    fits = int(fit.reason.split("at 30 min/day: ")[1].split(" of")[0])
    assert 0 < fits < 24
    enough = int(fit.reason.split("; at ")[1].split(" min/day")[0])
    assert feasibility(Plan(plan.interview, enough), D0, topics, [],
                       Pace(30, 0.3)).feasible


def _study_day(store: Store, rng: random.Random, speed_s: tuple[int, int]) -> int:
    """Answer today's whole queue (reviews and new cards), then re-drill to 4; returns the
    number of new cards introduced."""
    queue = store.today_queue()
    for item in queue.reviews + queue.new:
        quality = rng.choice((2, 3, 4, 4, 5, 5))
        result = store.answer(item.question_id, quality, correct=quality >= 3,
                              answer_text="x", response_ms=rng.randint(*speed_s) * 1000)
        while result.needs_redrill:
            quality = rng.choice((3, 4, 5, 5))
            result = store.answer(item.question_id, quality, correct=True, answer_text="x",
                                  response_ms=rng.randint(*speed_s) * 1000, mode="redrill")
    return len(queue.new)


@pytest.mark.slow
def test_a_simulated_learner_meets_the_plan(
    dojo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A learner who has studied a week at ~20 s an answer sets a plan 21 days out at
    30 min/day: feasible; every topic is fully introduced by day 14 of the plan; at 5 min/day
    the same plan is not feasible, and says why."""
    rng = random.Random(5)
    bank = load_study_bank()
    runner = CliRunner()

    def on(day: dt.date) -> None:
        monkeypatch.setenv("DOJO_NOW", f"{day.isoformat()}T12:00:00+00:00")

    def plan_json(*args: str) -> dict[str, object]:
        out = runner.invoke(main, ["plan", *args, "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.output)  # type: ignore[no-any-return]

    with Store.open(dojo_home / "dojo.sqlite3") as store:
        store.update_settings(timezone="UTC")
        sync_bank(store, bank)
        start = D0 - dt.timedelta(days=7)
        for i in range(7):  # a week at the default new-card limit, before planning
            on(start + dt.timedelta(days=i))
            assert _study_day(store, rng, (12, 28)) == 10
    on(D0)
    interview = D0 + dt.timedelta(days=21)
    low = plan_json("--interview", interview.isoformat(), "--minutes", "5")
    assert low["feasible"] is False
    reason = str(low["reason"])
    assert "at 5 min/day:" in reason and "of 24 topics; at" in reason, reason
    report = plan_json("--minutes", "30")
    assert report["feasible"] is True, report["reason"]
    assert set(report) == {"interview", "days_left", "minutes_per_day", "new_per_day",
                           "feasible", "reason", "topics"}
    assert report["days_left"] == 21 and report["minutes_per_day"] == 30
    topics = report["topics"]
    assert isinstance(topics, list) and len(topics) == 24
    left = sum(t["cards"] - t["introduced"] for t in topics)
    assert report["new_per_day"] == -(-left // 15)  # today to the 14th day, 15 days
    with Store.open(dojo_home / "dojo.sqlite3") as store:
        introduced = 0
        for i in range(15):
            on(D0 + dt.timedelta(days=i))
            introduced += _study_day(store, rng, (12, 28))
        assert introduced == left
        on(D0 + dt.timedelta(days=15))
        assert not store.today_queue().new  # the last week is for review
    on(D0 + dt.timedelta(days=14))
    day14 = plan_json()
    assert all(t["introduced"] == t["cards"] > 0 for t in day14["topics"]), day14["topics"]
    assert day14["feasible"] is True and day14["new_per_day"] == 0
    assert all(0 < t["recall_on_day"] <= 1 for t in day14["topics"])
