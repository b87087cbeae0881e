"""Following the plan costs what it said: a simulated learner follows the
plan for 21 days through the real Store under DOJO_NOW (today's queue, each answer right with
the card's predicted recall, re-drills until graded 4), and the answers, minutes and recall on
the interview day land within 10% / 10% / 0.02 of what `scheduler.simulate` predicted."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from scheduler import fsrs_memory
from scheduler.plan import Plan
from scheduler.readiness import day_start
from scheduler.simulate import Learner, SimCard, simulate
from scheduler.store import Store

TOPICS = 6
PER_TOPIC = 20
ANSWER_S = 20.0
FIRST_RIGHT = 0.8
START = dt.date(2026, 3, 1)


def _noon(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC)


def _answer(store: Store, qid: str, right: bool, mode: str = "review") -> None:
    grade = 4 if right else 1
    store.answer(qid, grade, correct=right, answer_text="x", response_ms=int(ANSWER_S * 1000),
                 mode=mode)  # type: ignore[arg-type]


def _follow_one_day(store: Store, rng: random.Random, fsrs: object) -> int:
    """Today's queue as the learner would work it; returns the answers given."""
    from scheduler.days import utc_now

    queue = store.today_queue()
    given = 0
    for item in (*queue.reviews, *queue.new):
        memory = store.card(item.question_id).memory
        p = FIRST_RIGHT if memory is None else fsrs_memory.recall(memory, utc_now(), fsrs)  # type: ignore[arg-type]
        _answer(store, item.question_id, rng.random() < p)
        given += 1
    while (redrill := store.today_queue().redrill):
        for item in redrill:
            memory = store.card(item.question_id).memory
            p = 1.0 if memory is None else fsrs_memory.recall(memory, utc_now(), fsrs)  # type: ignore[arg-type]
            _answer(store, item.question_id, rng.random() < p, "redrill")
            given += 1
    return given


def _topic_recall(store: Store, at: dt.datetime, fsrs: object) -> float:
    by_topic: dict[str, list[float]] = {}
    for c in store.cards():
        values = by_topic.setdefault(c.topic, [])
        if not c.is_new and c.memory is not None:
            values.append(fsrs_memory.recall(c.memory, at, fsrs))  # type: ignore[arg-type]
    return sum(sum(v) / len(v) if v else 0.0 for v in by_topic.values()) / len(by_topic)


@pytest.mark.slow
def test_a_plan_followed_for_21_days_costs_what_it_predicted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(11)
    with Store.open(tmp_path / "dojo.sqlite3") as store:
        store.update_settings(timezone="UTC", new_limit=10)
        store.sync_cards((f"t{t}-{i:02}", f"t{t}") for t in range(TOPICS)
                         for i in range(PER_TOPIC))
        fsrs = fsrs_memory.make_scheduler(None)
        # A week of study before the plan: reviews already scheduled when it starts.
        for day in range(7):
            monkeypatch.setenv("DOJO_NOW", _noon(START + dt.timedelta(days=day)).isoformat())
            _follow_one_day(store, rng, fsrs)
        today = START + dt.timedelta(days=7)
        plan = Plan(today + dt.timedelta(days=21), 60)
        store.set_plan(plan)
        cfg = store.settings()
        cards = [SimCard(c.question_id, c.topic, c.scheduled, c.memory) for c in store.cards()]
        forecast = simulate(cards, plan, today, lambda d: day_start(d, cfg.rollover_hour, dt.UTC),
                            cfg, None, Learner(ANSWER_S, FIRST_RIGHT), runs=8)
        predicted_answers = sum(forecast.answers)
        predicted_minutes = sum(forecast.card_minutes)
        given = 0
        for day in range(21):
            monkeypatch.setenv("DOJO_NOW", _noon(today + dt.timedelta(days=day)).isoformat())
            given += _follow_one_day(store, rng, fsrs)
        minutes = given * ANSWER_S / 60
        recall = _topic_recall(store, day_start(plan.interview, cfg.rollover_hour, dt.UTC), fsrs)
    assert abs(given - predicted_answers) <= 0.10 * predicted_answers, (given, predicted_answers)
    assert abs(minutes - predicted_minutes) <= 0.10 * predicted_minutes
    assert abs(recall - forecast.mean_recall) <= 0.02, (recall, forecast.mean_recall)
    assert all(c.is_new is False for c in store_cards_after(tmp_path))  # every card introduced


def store_cards_after(tmp_path: Path) -> list:
    with Store.open(tmp_path / "dojo.sqlite3") as store:
        return store.cards()
