"""`Store.answered_today`: the plain-SQL check the app makes before each card (was it answered
in another window today?) agrees with the card and settings read through the ORM."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from scheduler.store import Store
from tests.scheduler.conftest import at, grade


def orm_answered_today(store: Store, qid: str, now: dt.datetime) -> bool:
    """The same rule through `card()` and `settings()` (what the app asked before)."""
    card = store.card(qid)
    if card.due is None or card.last_reviewed_at is None:
        return False
    cfg = store.settings()
    day = store.study_day(now, cfg)
    return card.due > day and store.study_day(card.last_reviewed_at, cfg) == day


def test_answered_today_is_true_only_for_a_card_answered_today_and_not_due_again(
        store: Store) -> None:
    store.sync_cards([("a", "t"), ("b", "t"), ("c", "t"), ("d", "t")])
    grade(store, "b", 4, at(1))  # yesterday: due again today
    grade(store, "c", 4, at(2, hour=9))  # today, passed: due days from now
    grade(store, "d", 1, at(2, hour=9))  # today, failed: due tomorrow (re-drilled meanwhile)
    now = at(2, hour=15)
    assert [store.answered_today(q, now) for q in "abcd"] == [False, False, True, True]
    assert [orm_answered_today(store, q, now) for q in "abcd"] == [False, False, True, True]
    assert store.answered_today("no-such-card", now) is False


def test_answered_today_follows_the_rollover_hour_and_time_zone(store: Store) -> None:
    store.sync_cards([("a", "t")])
    store.update_settings(timezone="America/New_York", rollover_hour=4, now=at(1, hour=0))
    answered = dt.datetime(2026, 3, 3, 7, 0, tzinfo=dt.UTC)  # 02:00 in New York: day of the 2nd
    grade(store, "a", 4, answered)
    assert store.answered_today("a", answered + dt.timedelta(hours=1)) is True
    # 04:00 New York on the 3rd (09:00 UTC): a new study day, the answer was yesterday's.
    assert store.answered_today("a", dt.datetime(2026, 3, 3, 9, 0, tzinfo=dt.UTC)) is False


@pytest.mark.slow
def test_answered_today_agrees_with_the_orm_on_a_random_history(store: Store) -> None:
    rng = random.Random(7)
    ids = [f"q{i}" for i in range(16)]
    store.sync_cards([(q, "t") for q in ids])
    seen: list[bool] = []
    for day in range(1, 22):
        today = store.study_day(at(day))
        due = [q for q in ids if (d := store.card(q).due) is None or d <= today]
        for hour, q in enumerate(rng.sample(due, min(6, len(due)))):
            grade(store, q, rng.choice([1, 3, 4, 5]), at(day, hour=2 * hour + 5))
        now = at(day, hour=23)
        answered = [store.answered_today(q, now) for q in ids]
        assert answered == [orm_answered_today(store, q, now) for q in ids]
        seen += answered
    assert True in seen and False in seen  # both answers were compared
