"""Today's queue: order, limits, re-drill, bury/suspend/leech, retirement and study days."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from scheduler.errors import UnknownCardError
from scheduler.store import Store
from tests.scheduler.conftest import at, grade


def ids(items: tuple[object, ...]) -> list[str]:
    return [i.question_id for i in items]  # type: ignore[attr-defined]


def test_new_cards_come_in_bank_order_up_to_the_new_limit(store: Store) -> None:
    store.sync_cards([(f"q{i:02}", "t") for i in range(15)])
    queue = store.today_queue(at(1))
    assert ids(queue.new) == [f"q{i:02}" for i in range(10)]
    assert queue.reviews == () and queue.redrill == ()
    for qid in ids(queue.new)[:4]:
        grade(store, qid, 5, at(1))
    # Four introduced today: six more new ones today, not ten.
    assert ids(store.today_queue(at(1)).new) == [f"q{i:02}" for i in range(4, 10)]
    assert len(store.today_queue(at(1), new_limit=5).new) == 1
    assert len(store.today_queue(at(2)).new) == 10  # a new day, a fresh allowance


def test_due_reviews_oldest_first_then_new_within_review_limit(store: Store) -> None:
    store.sync_cards([(q, "t") for q in ("a", "b", "c", "d", "e")])
    grade(store, "c", 4, at(1))  # due day 2
    grade(store, "a", 4, at(2))  # due day 3
    grade(store, "b", 4, at(2))  # due day 3
    queue = store.today_queue(at(5))
    assert ids(queue.reviews) == ["c", "a", "b"]  # overdue-most first, then bank order
    assert [i.due for i in queue.reviews] == [at(2).date(), at(3).date(), at(3).date()]
    assert ids(queue.new) == ["d", "e"]
    assert ids(store.today_queue(at(5), review_limit=2).items) == ["c", "a"]
    assert ids(store.today_queue(at(5), review_limit=4).items) == ["c", "a", "b", "d"]
    grade(store, "c", 5, at(5))
    # One answer spent today: the limit of 4 leaves three.
    assert ids(store.today_queue(at(5), review_limit=4).items) == ["a", "b", "d"]


def test_settings_drive_limits(store: Store) -> None:
    store.sync_cards([(f"q{i}", "t") for i in range(5)])
    store.update_settings(new_limit=2)
    assert len(store.today_queue(at(1)).new) == 2
    with pytest.raises(ValueError, match="new_limit"):
        store.update_settings(new_limit=-1)
    with pytest.raises(ValueError, match="rollover_hour"):
        store.update_settings(rollover_hour=24)
    with pytest.raises(ValueError, match="timezone"):
        store.update_settings(timezone="Mars/Olympus")
    with pytest.raises(ValueError, match="unknown setting"):
        store.update_settings(colour="red")
    assert store.settings().new_limit == 2


def test_redrill_until_graded_four_and_schedule_untouched(store: Store) -> None:
    store.sync_cards([("a", "t"), ("b", "t"), ("c", "t")])
    first = grade(store, "a", 2, at(1))
    grade(store, "b", 3, at(1))
    grade(store, "c", 4, at(1))
    queue = store.today_queue(at(1))
    assert ids(queue.redrill) == ["a", "b"]  # q3 passes SM-2 but still needs re-drill
    before = store.card("a")
    again = grade(store, "a", 3, at(1, 13), mode="redrill")
    assert again.after == again.before == first.after
    assert ids(store.today_queue(at(1)).redrill) == ["b", "a"]  # latest miss goes last
    grade(store, "a", 4, at(1, 14), mode="redrill")
    grade(store, "b", 5, at(1, 14), mode="redrill")
    assert store.today_queue(at(1)).redrill == ()
    # Re-drill changed nothing in the schedule; the FSRS memory counts it (a memory event).
    assert replace(store.card("a"), memory=None) == replace(before, memory=None)
    assert store.card("a").memory != before.memory
    assert [r.mode for r in store.history("a")] == ["review", "redrill", "redrill"]
    assert store.today_queue(at(2)).redrill == ()  # re-drill is for today only


def test_cram_is_logged_but_changes_nothing(store: Store) -> None:
    store.sync_cards([("a", "t")])
    grade(store, "a", 5, at(1))
    card = store.card("a")
    result = grade(store, "a", 0, at(1), mode="cram")
    assert result.after == result.before
    assert replace(store.card("a"), memory=None) == replace(card, memory=None)
    assert store.today_queue(at(1)).redrill == ()  # cram misses do not enter re-drill


def test_review_of_a_card_not_due_is_refused(store: Store) -> None:
    store.sync_cards([("a", "t")])
    grade(store, "a", 5, at(1))
    with pytest.raises(ValueError, match="not due until 2026-03-02"):
        grade(store, "a", 5, at(1))
    with pytest.raises(ValueError, match="mode"):
        store.answer("a", 5, correct=True, answer_text="", response_ms=1, now=at(1),
                     mode="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="quality"):
        grade(store, "a", 7, at(2))
    with pytest.raises(UnknownCardError):
        grade(store, "nope", 4, at(2))
    assert len(store.history("a")) == 1


def test_bury_hides_until_tomorrow_and_suspend_until_unsuspended(store: Store) -> None:
    store.sync_cards([("a", "t"), ("b", "t"), ("c", "t")])
    store.bury("a", now=at(1))
    store.suspend("b")
    assert ids(store.today_queue(at(1)).items) == ["c"]
    assert ids(store.today_queue(at(2)).items) == ["a", "c"]
    store.unsuspend("b")
    assert ids(store.today_queue(at(2)).items) == ["a", "b", "c"]
    grade(store, "c", 1, at(2))
    store.suspend("c")
    assert store.today_queue(at(2)).redrill == ()  # suspended cards leave re-drill too
    assert store.forecast(3, now=at(2))[at(3).date()] == 0


def test_leech_flag_at_eight_lapses(store: Store) -> None:
    store.sync_cards([("a", "t")])
    results = [grade(store, "a", 1, at(day)) for day in range(1, 9)]
    assert [r.lapses for r in results] == list(range(1, 9))
    assert [r.became_leech for r in results] == [False] * 7 + [True]
    assert store.card("a").leech
    assert not grade(store, "a", 5, at(9)).became_leech and store.card("a").leech


def test_sync_updates_topics_and_retires_missing(store: Store) -> None:
    assert store.sync_cards([("a", "x"), ("b", "y")]).added == 2
    result = store.sync_cards([("a", "x2")], retire_missing=True)
    assert (result.added, result.updated, result.retired) == (0, 1, 1)
    assert store.card("a").topic == "x2" and store.card("b").retired
    assert ids(store.today_queue(at(1)).items) == ["a"]
    store.sync_cards([("a", "x2"), ("b", "y")], retire_missing=True)
    assert ids(store.today_queue(at(1)).items) == ["a", "b"]


def test_flags(store: Store) -> None:
    store.sync_cards([("a", "t")])
    store.flag("a", "option C is also right")
    assert [f.note for f in store.flags("a")] == ["option C is also right"]
    with pytest.raises(ValueError):
        store.flag("a", "  ")
    assert store.clear_flags("a") == 1 and store.flags() == []


# ------------------------------------------------------------------------ days & timezones
def test_rollover_hour_late_night_counts_for_the_day_it_began(store: Store) -> None:
    store.sync_cards([("a", "t")])
    late = dt.datetime(2026, 3, 2, 3, 59, tzinfo=dt.UTC)  # 03:59 is still March 1st's day
    assert store.study_day(late) == dt.date(2026, 3, 1)
    assert store.study_day(late + dt.timedelta(minutes=1)) == dt.date(2026, 3, 2)
    result = grade(store, "a", 4, late)
    assert result.day == dt.date(2026, 3, 1) and result.due == dt.date(2026, 3, 2)
    assert ids(store.today_queue(late + dt.timedelta(minutes=1)).reviews) == ["a"]
    store.update_settings(rollover_hour=0)
    assert store.study_day(late) == dt.date(2026, 3, 2)


def test_study_day_follows_the_configured_timezone(store: Store) -> None:
    store.update_settings(timezone="America/Los_Angeles")
    moment = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)  # 02:00 PST on March 2nd
    assert store.study_day(moment) == dt.date(2026, 3, 1)
    store.update_settings(timezone="Asia/Tokyo")  # 19:00 JST
    assert store.study_day(moment) == dt.date(2026, 3, 2)
    store.update_settings(timezone="Pacific/Kiritimati")  # UTC+14: 00:00 on March 3rd
    assert store.study_day(moment) == dt.date(2026, 3, 2)


def test_dst_change_keeps_rollover_at_local_four(store: Store) -> None:
    store.update_settings(timezone="America/New_York")
    # 2026-03-08: clocks jump 02:00 → 03:00. 03:30 local (07:30 UTC) is before 4 AM.
    assert store.study_day(dt.datetime(2026, 3, 8, 7, 30, tzinfo=dt.UTC)) == dt.date(2026, 3, 7)
    # 04:00 EDT = 08:00 UTC starts March 8th.
    assert store.study_day(dt.datetime(2026, 3, 8, 8, 0, tzinfo=dt.UTC)) == dt.date(2026, 3, 8)


def test_system_local_time_is_the_default(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    store.update_settings(timezone=None)
    monkeypatch.setenv("TZ", "Australia/Sydney")
    time.tzset()
    try:
        # 15:00 UTC = 02:00 AEDT next day: before rollover, so still the UTC calendar date.
        assert store.study_day(dt.datetime(2026, 3, 1, 15, tzinfo=dt.UTC)) == dt.date(2026, 3, 1)
        assert store.study_day(dt.datetime(2026, 3, 1, 18, tzinfo=dt.UTC)) == dt.date(2026, 3, 2)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_travel_across_timezones_keeps_days_stored(store: Store) -> None:
    store.sync_cards([("a", "t")])
    grade(store, "a", 5, at(1, 12))
    store.update_settings(timezone="Asia/Tokyo")
    # Stats use the day recorded with the answer, not a re-derived one.
    assert store.reviews_per_day(2, now=at(2, 0))[at(1).date()] == 1
