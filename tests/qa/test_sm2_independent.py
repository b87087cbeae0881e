"""SM-2 checked against an independent reading of docs/scheduling.md (fractions, no shared code).

Long random grade sequences go through both the pure core and a real Store (with re-drill, cram
and undo mixed in); both must agree with the model written here from the notes alone.
"""

from __future__ import annotations

import datetime as dt
import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.records import Scheduled, Settings
from scheduler.sm2 import CardState, next_state
from scheduler.store import Store
from scheduler.transition import apply


def model(grades: list[int]) -> list[tuple[Fraction, int, int]]:
    """(EF, interval, n) after each scheduled review, straight from the notes' text."""
    ef, n, interval = Fraction(5, 2), 0, 0
    out = []
    for q in grades:
        if q >= 3:
            n += 1
            interval = 1 if n == 1 else 6 if n == 2 else math.ceil(interval * ef)
            ef = max(Fraction(13, 10), ef + Fraction(1, 10) - (5 - q) * (Fraction(8, 100) + (5 - q)
                                                                            * Fraction(2, 100)))
        else:
            n, interval = 0, 1
        out.append((ef, interval, n))
    return out


def run_core(grades: list[int]) -> list[tuple[Fraction, int, int]]:
    state, out = CardState.new(), []
    for q in grades:
        state = next_state(state, q)
        assert isinstance(state.interval, int) and isinstance(state.repetitions, int)
        out.append((Fraction(str(state.ef)), state.interval, state.repetitions))
    return out


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=60))
def test_pure_core_matches_the_notes(grades: list[int]) -> None:
    assert run_core(grades) == model(grades)


@pytest.mark.parametrize("grades", [
    [3] * 20,                     # EF walks down to the 1.30 floor and stays
    [5] * 25,                     # big intervals: exact ceil with no float drift
    [4, 4, 3, 3, 3, 3, 3, 3, 3, 5, 5, 0, 3, 3, 3, 4, 5],
    [0, 0, 1, 2, 5, 5, 5, 2, 3, 5, 4, 4, 4, 4],
])
def test_pure_core_on_hand_picked_sequences(grades: list[int]) -> None:
    assert run_core(grades) == model(grades)


def model_days(steps: list[tuple[str, int]], leech_lapses: int) -> list[tuple[object, ...]]:
    """The study rules around SM-2, from the notes: each review on the card's due day (a new
    card on day 0); a grade < 3 is a lapse, the card a leech once lapses reach the setting;
    re-drill and cram change nothing; every grade below 4 is re-drilled today."""
    ef, n, interval, due, lapses, leech = Fraction(5, 2), 0, 0, None, 0, False
    day = 0
    out: list[tuple[object, ...]] = []
    for mode, q in steps:
        if mode == "review":
            day = day if due is None else due
            if q >= 3:
                n += 1
                interval = 1 if n == 1 else 6 if n == 2 else math.ceil(interval * ef)
                ef = max(Fraction(13, 10), ef + Fraction(1, 10)
                         - (5 - q) * (Fraction(8, 100) + (5 - q) * Fraction(2, 100)))
            else:
                n, interval, lapses = 0, 1, lapses + 1
                leech = leech or lapses >= leech_lapses
            due = day + interval
        out.append((ef, n, interval, due, lapses, leech, q < 4))
    return out


def run_apply(steps: list[tuple[str, int]], leech_lapses: int) -> list[tuple[object, ...]]:
    start = dt.date(2026, 1, 1)
    card, day, out = Scheduled(CardState.new(), None, 0, False), start, []
    for mode, q in steps:
        if mode == "review" and card.due is not None:
            day = card.due
        card, redrill = apply(card, q, mode, day, Settings(leech_lapses=leech_lapses))  # type: ignore[arg-type]
        due = None if card.due is None else (card.due - start).days
        out.append((Fraction(str(card.state.ef)), card.state.repetitions, card.state.interval,
                    due, card.lapses, card.leech, redrill))
    return out


MODE_STEP = st.tuples(st.sampled_from(["review", "review", "review", "redrill", "cram"]),
                      st.integers(0, 5))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.lists(MODE_STEP, min_size=1, max_size=60), st.integers(1, 8))
def test_transition_matches_the_notes(steps: list[tuple[str, int]], leech_lapses: int) -> None:
    assert run_apply(steps, leech_lapses) == model_days(steps, leech_lapses)


@pytest.mark.parametrize("steps,leech_lapses", [
    ([("review", 0)] * 8, 8),                                   # the 8th lapse makes a leech
    ([("review", 2), ("redrill", 5), ("cram", 0), ("review", 5)] * 4, 3),
    ([("review", 5)] * 5 + [("review", 1), ("review", 3), ("review", 4)], 1),
])
def test_transition_on_hand_picked_sequences(steps: list[tuple[str, int]],
                                             leech_lapses: int) -> None:
    assert run_apply(steps, leech_lapses) == model_days(steps, leech_lapses)


STEP = st.one_of(
    st.tuples(st.just("review"), st.integers(0, 5)),
    st.tuples(st.just("redrill"), st.integers(0, 5)),
    st.tuples(st.just("undo"), st.just(0)),
)


@pytest.mark.slow
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(STEP, min_size=1, max_size=40), st.integers(0, 23))
def test_store_follows_the_notes_day_by_day(tmp_path_factory: pytest.TempPathFactory,
                                            steps: list[tuple[str, int]], minute: int) -> None:
    """Each day: the card is reviewed when due (at a random time of day near the rollover),
    then maybe re-drilled or undone. The stored card follows the model of its review grades."""
    path: Path = tmp_path_factory.mktemp("sm2") / "dojo.sqlite3"
    with Store.open(path, auto_backup=False) as store:
        store.update_settings(timezone="Europe/Paris")
        store.sync_cards([("c", "t")])
        day = dt.date(2026, 3, 20)          # spans the end-of-March DST change
        grades: list[int] = []              # scheduled review grades still in effect
        today: list[str] = []               # what today's answers were, for undo
        for action, q in steps:
            local = dt.datetime.combine(day, dt.time(4, minute), tzinfo=store_tz())
            if action == "undo":
                undone = store.undo(now=local)
                assert (undone is None) == (not today)
                if today and today.pop() == "review":
                    grades.pop()
            elif action == "redrill" and today:
                store.answer("c", q, correct=q >= 3, answer_text=str(q), response_ms=1,
                             now=local, mode="redrill")
                today.append("redrill")
            else:
                card = store.card("c")
                if card.due is not None and card.due > day:
                    day, today = card.due, []   # jump to the due day, early morning
                    local = dt.datetime.combine(day, dt.time(4, minute), tzinfo=store_tz())
                result = store.answer("c", q, correct=q >= 3, answer_text=str(q),
                                      response_ms=1, now=local)
                assert result.day == day
                grades.append(q)
                today.append("review")
            card = store.card("c")
            expected = model(grades)[-1] if grades else (Fraction(5, 2), 0, 0)
            assert (Fraction(str(card.state.ef)), card.state.interval,
                    card.state.repetitions) == expected


def store_tz() -> dt.tzinfo:
    from zoneinfo import ZoneInfo

    return ZoneInfo("Europe/Paris")


def test_a_state_can_be_built_from_the_ef_it_exposes() -> None:
    """Checking SM-2 from an arbitrary state should not need to know EF is kept in hundredths:
    `CardState(ef=Decimal('2.7'), ...)` used to be a TypeError, `CardState(2.7, ...)` a
    confusing 'EF must be >= 1.30, got 0.027'."""
    from decimal import Decimal

    state = CardState(ef=Decimal("2.7"), repetitions=3, interval=90)
    assert state == CardState(270, 3, 90) and state.ef == Decimal("2.70")
    assert next_state(state, 4).interval == 243  # exact: 90 x 2.7, not 244
    assert CardState(ef="1.3") == CardState(130) and CardState(ef=2.5) == CardState.new()
    for bad in (dict(ef=Decimal("1.29")), dict(ef="2.555"), dict(ef_hundredths=2.7),
                dict(repetitions=-1), dict(interval=1.5)):
        with pytest.raises(ValueError):
            CardState(**bad)  # type: ignore[arg-type]
