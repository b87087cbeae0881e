"""A plan to the interview day (issue #32): the pace replaces the new-card limit, and the plan
says whether the learner's own speed fits the daily budget."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from questions.bank import load_bank
from scheduler.plan import DEFAULT_LAB_LEVEL_S, Pace, Plan, feasibility, paced_new_limit
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
    """A learner who has studied a week at ~20 s an answer sets a plan 21 days out: at 5 and
    30 min/day it is not feasible (the 26 linked lab levels alone take 78 min/day at 45 min
    each), and says why; at 150 min/day it is, and every topic is fully introduced by day 14."""
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
    n_topics = len(load_bank().topics)  # the whole bank, every topic file
    assert "at 5 min/day:" in reason and f"of {n_topics} topics; at" in reason, reason
    cards_only = plan_json("--minutes", "30")
    assert cards_only["feasible"] is False and "26 lab levels at 45 min each" in str(
        cards_only["reason"]), cards_only["reason"]
    report = plan_json("--minutes", "150")
    assert report["feasible"] is True, report["reason"]
    assert set(report) == {"interview", "days_left", "minutes_per_day", "new_per_day",
                           "feasible", "reason", "topics"}
    assert report["days_left"] == 21 and report["minutes_per_day"] == 150
    topics = report["topics"]
    assert isinstance(topics, list) and len(topics) == n_topics
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
    assert day14["new_per_day"] == 0  # no level passed: all 26 left for the last day
    assert day14["feasible"] is False and "26 lab levels" in str(day14["reason"])
    assert all(0 < t["recall_on_day"] <= 1 for t in day14["topics"])
    with Store.open(dojo_home / "dojo.sqlite3") as store:  # one level passed in 12 min
        level = next((q.lab.exercise, q.lab.level) for q in bank.questions if q.lab)
        store.record_lab_attempt(*level, "cpu", True, [], {}, 3.0)
        store.grade_lab_card(*level, 4, passed=True, rebuild=False, pass_s=720.0)
    assert "25 lab levels at 12 min each" in str(plan_json()["reason"])


def test_lab_levels_to_pass_count_at_the_default_time() -> None:
    """Three levels still to pass over the 15 introduction days at 45 min each: 9 min a day,
    which a 5-minute budget that fits the cards alone does not hold."""
    plan = Plan(D0 + dt.timedelta(days=21), 5)
    topics = [("kv", 0), ("batching", 0)]
    pace = Pace.from_answers([])
    assert pace.lab_level_s == DEFAULT_LAB_LEVEL_S == 45 * 60
    assert feasibility(plan, D0, topics, [], pace).feasible  # the cards alone fit
    fit = feasibility(plan, D0, topics, [], pace, {"kv": 1, "batching": 2})
    assert not fit.feasible and fit.need_minutes == 9
    assert "3 lab levels at 45 min each" in fit.reason and "1 of 2 topics" in fit.reason
    assert feasibility(Plan(plan.interview, 10), D0, topics, [], pace,
                       {"kv": 1, "batching": 2}).feasible


def test_lab_levels_count_at_the_learners_own_time_to_pass() -> None:
    pace = Pace.from_answers([], [600.0, 1200.0, None, 900.0])  # median of timed passes: 15 min
    assert pace.lab_level_s == 900.0
    fit = feasibility(Plan(D0 + dt.timedelta(days=21), 5), D0, [("kv", 0)], [], pace,
                      {"kv": 3})
    assert fit.feasible and fit.need_minutes == 3 and "at 15 min each" in fit.reason
