"""The pure SM-2 step: the pinned worked sequences, exactness and properties over grades."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.sm2 import CardState, next_state


def run(grades: list[int]) -> list[tuple[str, int, int]]:
    state, out = CardState.new(), []
    for q in grades:
        state = next_state(state, q)
        out.append((str(state.ef), state.interval, state.repetitions))
    return out


@pytest.mark.parametrize(
    ("grades", "expected"),
    [
        ([4] * 5, [("2.50", 1, 1), ("2.50", 6, 2), ("2.50", 15, 3), ("2.50", 38, 4),
                   ("2.50", 95, 5)]),
        ([5] * 5, [("2.60", 1, 1), ("2.70", 6, 2), ("2.80", 17, 3), ("2.90", 48, 4),
                   ("3.00", 140, 5)]),
        ([5, 5, 2, 5, 5], [("2.60", 1, 1), ("2.70", 6, 2), ("2.70", 1, 0), ("2.80", 1, 1),
                           ("2.90", 6, 2)]),
        # Our own: all 3s walk EF down 0.14 a time to the 1.30 floor, intervals use the old EF.
        ([3] * 6, [("2.36", 1, 1), ("2.22", 6, 2), ("2.08", 14, 3), ("1.94", 30, 4),
                   ("1.80", 59, 5), ("1.66", 107, 6)]),
        # A blackout on a fresh card: n stays 0, interval 1, EF untouched.
        ([0, 0, 4], [("2.50", 1, 0), ("2.50", 1, 0), ("2.50", 1, 1)]),
        # q3 lowers EF, but the lapse after it keeps the lowered EF; q4 keeps EF exactly.
        ([4, 4, 3, 1, 4, 4, 4], [("2.50", 1, 1), ("2.50", 6, 2), ("2.36", 15, 3),
                                 ("2.36", 1, 0), ("2.36", 1, 1), ("2.36", 6, 2),
                                 ("2.36", 15, 3)]),
    ],
)
def test_worked_sequences(grades: list[int], expected: list[tuple[str, int, int]]) -> None:
    assert run(grades) == expected


def test_ef_floor_is_1_30() -> None:
    state = CardState.new()
    for _ in range(20):
        state = next_state(state, 3)
    assert state.ef == Decimal("1.30")


def test_ceil_is_exact_where_floats_are_not() -> None:
    # 90 × 2.7 = 243.00000000000003 in floats; ceil must give 243, not 244.
    assert next_state(CardState(270, 3, 90), 4).interval == 243
    # A true fraction still rounds up: 15 × 2.36 = 35.4 → 36.
    assert next_state(CardState(236, 3, 15), 4).interval == 36


def test_new_card_and_ef_type() -> None:
    state = CardState.new()
    assert (state.ef, state.repetitions, state.interval) == (Decimal("2.50"), 0, 0)
    assert isinstance(next_state(state, 5).ef, Decimal)


@pytest.mark.parametrize("bad", [-1, 6, 2.0, 4.5, "4", None, True, False])
def test_invalid_quality_raises_value_error(bad: object) -> None:
    with pytest.raises(ValueError, match="quality"):
        next_state(CardState.new(), bad)  # type: ignore[arg-type]


grades = st.lists(st.integers(0, 5), max_size=60)


@given(grades)
def test_ef_never_below_floor_and_moves_in_exact_steps(seq: list[int]) -> None:
    state = CardState.new()
    for q in seq:
        nxt = next_state(state, q)
        assert nxt.ef >= Decimal("1.30")
        assert nxt.ef == nxt.ef.quantize(Decimal("0.01"))
        expected = {5: Decimal("0.10"), 4: Decimal("0"), 3: Decimal("-0.14")}.get(q, Decimal(0))
        assert nxt.ef == max(Decimal("1.30"), state.ef + expected)
        state = nxt


@given(grades)
def test_lapse_keeps_ef_and_resets(seq: list[int]) -> None:
    state = CardState.new()
    for q in seq:
        nxt = next_state(state, q)
        if q < 3:
            assert (nxt.ef, nxt.repetitions, nxt.interval) == (state.ef, 0, 1)
        else:
            assert nxt.repetitions == state.repetitions + 1
        state = nxt


@given(grades)
def test_consecutive_passes_never_shrink_and_match_exact_formula(seq: list[int]) -> None:
    state = CardState.new()
    for q in seq:
        nxt = next_state(state, q)
        if q >= 3 and state.repetitions >= 1:
            assert nxt.interval >= state.interval
        if q >= 3 and state.repetitions >= 2:
            # ceil(I × EF_before), computed independently with Decimal
            exact = Decimal(state.interval) * state.ef
            assert nxt.interval == int(exact.to_integral_value(rounding="ROUND_CEILING"))
        state = nxt
