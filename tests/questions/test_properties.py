"""Properties over many inputs: parsing never crashes, shown answers read back as themselves,
known exercises come from disk as well as the agreed table."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from questions.answers import Reask, parse_answer, parse_quantity
from questions.labs import AGREED_EXERCISES, known_exercises
from questions.units import UNITS, format_quantity

QUESTION_UNITS = sorted(UNITS)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=30), st.sampled_from(QUESTION_UNITS))
def test_any_text_is_either_a_number_or_a_reask(text: str, unit: str) -> None:
    try:
        value = parse_answer(text, unit)
    except Reask as exc:
        assert str(exc)  # says why
    else:
        assert isinstance(value, float)


@settings(max_examples=150, deadline=None)
@given(
    st.floats(min_value=1e-3, max_value=1e13, allow_nan=False, allow_infinity=False),
    st.sampled_from(QUESTION_UNITS),
    st.booleans(),
)
def test_a_displayed_answer_reads_back_as_itself(value: float, unit: str, negative: bool) -> None:
    """What feedback shows ('$1,125', '16.7%', '320 KiB') is also valid input for that unit."""
    value = -value if negative else value
    shown = format_quantity(value, unit)
    assert parse_answer(shown, unit) == pytest.approx(value, rel=1e-5)


def test_ambiguous_suffix_offers_both_readings() -> None:
    readings = parse_quantity("1.5B")
    assert [(v, u.symbol if u else None) for v, u in readings] == [(1.5, "B"), (1.5e9, None)]


def test_known_exercises_include_the_agreed_table_and_disk(tmp_path: Path) -> None:
    assert known_exercises(tmp_path / "missing") == AGREED_EXERCISES
    folder = tmp_path / "paged_attn"
    folder.mkdir()
    (folder / "exercise.toml").write_text(
        'id = "paged-attn"\ntitle = "Paged attention"\n'
        "[[level]]\nnumber = 1\n[[level]]\nnumber = 2\n[[level]]\nnumber = 3\n",
        encoding="utf-8",
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "exercise.toml").write_text("id = = 1", encoding="utf-8")
    known = known_exercises(tmp_path)
    assert known["paged-attn"] == 3
    assert {k: known[k] for k in AGREED_EXERCISES} == AGREED_EXERCISES
