"""Answers through the Store: the log, undo, lab attempts and the stats built on them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.sm2 import CardState, next_state
from scheduler.store import Store
from tests.scheduler.conftest import at, grade


def test_answer_logs_everything_and_follows_sm2(store: Store) -> None:
    store.sync_cards([("a", "kv")])
    result = store.answer("a", 5, correct=True, answer_text="42 GB", response_ms=6400,
                          params={"layers": 32, "dtype": "fp16"}, now=at(1))
    assert result.after == next_state(CardState.new(), 5) and result.due == at(2).date()
    (row,) = store.history("a")
    assert (row.quality, row.correct, row.answer_text, row.response_ms) == (5, True, "42 GB", 6400)
    assert row.params == {"layers": 32, "dtype": "fp16"}
    assert (row.before, row.after, row.due_before, row.due_after) == (
        CardState.new(), result.after, None, at(2).date())
    assert row.reviewed_at == at(1) and row.day == at(1).date()
    card = store.card("a")
    assert (card.ef, card.interval, card.repetitions) == (Decimal("2.60"), 1, 1)
    assert card.last_reviewed_at == at(1)
    with pytest.raises(ValueError, match="params"):
        store.answer("a", 5, correct=True, answer_text="", response_ms=1, now=at(2),
                     params={"x": object()})
    assert len(store.history("a")) == 1


def test_store_follows_the_worked_sequence_day_by_day(store: Store) -> None:
    store.sync_cards([("a", "t")])
    day, seen = 1, []
    for q in (5, 5, 2, 5, 5):
        r = grade(store, "a", q, at(day))
        seen.append((str(r.after.ef), r.after.interval, r.after.repetitions))
        day += r.after.interval
    assert seen == [("2.60", 1, 1), ("2.70", 6, 2), ("2.70", 1, 0), ("2.80", 1, 1),
                    ("2.90", 6, 2)]
    assert store.card("a").due == at(day).date()


def test_undo_several_steps_restores_cards_exactly(store: Store) -> None:
    store.sync_cards([("a", "t"), ("b", "t")])
    grade(store, "a", 5, at(1))
    grade(store, "b", 5, at(1))
    snapshots = [(store.card("a"), store.card("b"))]
    steps = [("a", 4, "review", 2), ("b", 1, "review", 2), ("b", 3, "redrill", 2),
             ("b", 5, "redrill", 2)]
    for qid, q, mode, day in steps:
        grade(store, qid, q, at(day), mode=mode)  # type: ignore[arg-type]
        snapshots.append((store.card("a"), store.card("b")))
    assert store.card("b").lapses == 1
    for qid, q, mode, _ in reversed(steps):
        undone = store.undo(now=at(2))
        assert undone is not None and (undone.question_id, undone.quality, undone.mode) == (
            qid, q, mode)
        snapshots.pop()
        assert (store.card("a"), store.card("b")) == snapshots[-1]
        assert undone.card == store.card(qid)
    assert store.undo(now=at(2)) is None  # yesterday's answers are not undone
    assert len(store.history("a")) == 1 and len(store.history("b")) == 1
    grade(store, "b", 4, at(2))  # the card is due again, as before the undone review


def test_undo_of_the_leech_lapse_clears_the_leech(store: Store) -> None:
    store.update_settings(leech_lapses=2)
    store.sync_cards([("a", "t")])
    grade(store, "a", 0, at(1))
    grade(store, "a", 0, at(2))
    assert store.card("a").leech
    store.undo(now=at(2))
    assert not store.card("a").leech and store.card("a").lapses == 1


def test_lab_attempts_round_trip(store: Store) -> None:
    first = store.record_lab_attempt(
        "paged_kv", 2, "cuda:NVIDIA H200", True,
        [{"name": "small", "passed": True, "max_abs_err": 1e-6}], {"tokens_per_s": 1234.5}, 3.25)
    second = store.record_lab_attempt("rope", 1, "cpu", False, [], {}, 0.5)
    assert second > first
    (kv,) = store.lab_attempts("paged_kv")
    assert (kv.id, kv.level, kv.device, kv.passed, kv.duration_s) == (
        first, 2, "cuda:NVIDIA H200", True, 3.25)
    assert kv.cases == [{"name": "small", "passed": True, "max_abs_err": 1e-6}]
    assert kv.metrics == {"tokens_per_s": 1234.5}
    assert [a.exercise for a in store.lab_attempts()] == ["paged_kv", "rope"]
    with pytest.raises(ValueError, match="cases"):
        store.record_lab_attempt("rope", 1, "cpu", False, [1], {}, 0.5)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="metrics"):
        store.record_lab_attempt("rope", 1, "cpu", False, [], {"x": float("nan")}, 0.5)
    assert len(store.lab_attempts()) == 2


# ----------------------------------------------------------------------------------- stats
def test_reviews_per_day_and_streak(store: Store) -> None:
    store.sync_cards([(f"q{i}", "t") for i in range(5)])
    for day, qid in [(1, "q0"), (3, "q1"), (4, "q2"), (4, "q3"), (5, "q4")]:
        grade(store, qid, 5, at(day))
    grade(store, "q4", 2, at(5), mode="cram")
    per_day = store.reviews_per_day(5, now=at(5))
    assert list(per_day.values()) == [1, 0, 1, 2, 2]
    assert list(per_day) == [at(d).date() for d in range(1, 6)]
    assert store.streak(now=at(5)) == 3
    assert store.streak(now=at(6)) == 3  # today not studied yet: the streak holds
    assert store.streak(now=at(7)) == 0
    assert store.streak(now=at(2)) == 1


def test_true_retention_counts_first_answers_on_mature_cards(store: Store) -> None:
    store.sync_cards([("m", "t"), ("y", "t")])
    day = 1
    for q in (5, 5, 5):  # m: intervals 1, 6, 17
        day += grade(store, "m", q, at(day)).after.interval
    grade(store, "y", 5, at(day))  # young card, not counted
    r = grade(store, "m", 4, at(day))  # interval before 17: not yet mature
    day += r.after.interval  # interval now 48
    grade(store, "m", 1, at(day))  # mature lapse: counted
    grade(store, "m", 5, at(day), mode="redrill")  # re-drill: not counted
    day += 1
    grade(store, "m", 5, at(day))  # interval before 1: not counted
    retention = store.true_retention(days=365, now=at(day))
    assert (retention.passed, retention.total, retention.rate) == (0, 1, 0.0)
    assert store.true_retention(days=1, now=at(day)).rate is None


def test_retention_by_week_buckets_mature_first_answers_over_time(store: Store) -> None:
    store.sync_cards([("m", "t")])
    day = 1
    for q in (5, 5, 5):  # intervals 1, 6, 17: the next review is the first mature one
        day += grade(store, "m", q, at(day)).after.interval
    r = grade(store, "m", 4, at(day))  # interval before 17: young
    mature_pass_day = day + r.after.interval  # interval before 48: mature
    day = mature_pass_day
    day += grade(store, "m", 5, at(day)).after.interval
    grade(store, "m", 0, at(day))  # a mature lapse, the week the series ends
    series = store.retention_by_week(weeks=30, now=at(day))
    assert len(series) == 30 and series[-1][0] == at(day).date() - dt.timedelta(days=6)
    assert [s[0] for s in series] == sorted(s[0] for s in series)
    counted = [(start, r.passed, r.total) for start, r in series if r.total]
    assert [(p, t) for _, p, t in counted] == [(1, 1), (0, 1)]
    assert counted[0][0] <= at(mature_pass_day).date() < counted[0][0] + dt.timedelta(days=7)
    assert sum(r.total for _, r in series) == store.true_retention(7 * 30, at(day)).total


def test_topic_accuracy_forecast_and_distributions(store: Store) -> None:
    store.sync_cards([("a", "kv"), ("b", "kv"), ("c", "batching"), ("d", "batching")])
    grade(store, "a", 5, at(1))
    grade(store, "b", 1, at(1))
    grade(store, "b", 4, at(1), mode="redrill")
    grade(store, "c", 3, at(1))
    accuracy = store.topic_accuracy()
    assert {t: (a.answered, a.correct) for t, a in accuracy.items()} == {
        "kv": (2, 1), "batching": (1, 1)}
    assert accuracy["kv"].accuracy == 0.5
    forecast = store.forecast(3, now=at(1))
    assert forecast == {at(1).date(): 0, at(2).date(): 3, at(3).date(): 0}
    assert store.forecast(2, now=at(4)) == {at(4).date(): 3, at(5).date(): 0}  # overdue
    assert store.ef_distribution() == {Decimal("2.36"): 1, Decimal("2.50"): 1,
                                       Decimal("2.60"): 1}
    assert store.interval_distribution()["1d"] == 3
    assert sum(store.interval_distribution().values()) == 3


def test_stats_on_an_empty_database(store: Store) -> None:
    assert store.streak() == 0 and store.true_retention().rate is None
    assert store.topic_accuracy() == {} and set(store.forecast(30).values()) == {0}
    assert store.ef_distribution() == {} and store.today_queue().items == ()
    assert store.undo() is None


def test_now_defaults_to_the_current_time(store: Store) -> None:
    store.sync_cards([("a", "t")])
    result = store.answer("a", 4, correct=True, answer_text="", response_ms=1)
    assert result.day == store.study_day()
    reviewed = store.card("a").last_reviewed_at
    assert reviewed is not None
    assert abs(reviewed - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=1)


actions = st.lists(
    st.tuples(st.sampled_from(["review", "redrill", "cram", "undo", "next_day"]),
              st.integers(0, 5)),
    max_size=30,
)


@pytest.mark.slow
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(actions)
def test_store_agrees_with_pure_sm2_under_any_mix_of_actions(
    tmp_path_factory: pytest.TempPathFactory, seq: list[tuple[str, int]]
) -> None:
    """EF/schedule only move on scheduled reviews, exactly as next_state says; re-drill, cram
    and undo keep the card consistent with that model."""
    path = tmp_path_factory.mktemp("prop") / "dojo.sqlite3"
    with Store.open(path) as store:
        store.update_settings(timezone="UTC")
        store.sync_cards([("a", "t")])
        state, due, day = CardState.new(), None, 1
        undo_stack: list[tuple[CardState, dt.date | None]] = []
        for action, q in seq:
            if action == "next_day":
                day = max(day + 1, (due - at(1).date()).days + 1) if due else day + 1
                undo_stack.clear()
            elif action == "undo":
                undone = store.undo(now=at(day))
                assert (undone is None) == (not undo_stack)
                if undo_stack:
                    state, due = undo_stack.pop()
            elif action == "review" and due is not None and due > at(day).date():
                with pytest.raises(ValueError, match="not due"):
                    grade(store, "a", q, at(day))
            else:
                result = grade(store, "a", q, at(day), mode=action)  # type: ignore[arg-type]
                undo_stack.append((state, due))
                if action == "review":
                    state = next_state(state, q)
                    due = at(day).date() + dt.timedelta(days=state.interval)
                assert result.after == state and result.due == due
            card = store.card("a")
            assert (card.state, card.due) == (state, due)
