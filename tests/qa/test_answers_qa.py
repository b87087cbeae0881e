"""Answer inputs a real learner types that used to be mis-graded or needlessly re-asked."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from questions.answers import Reask, check_answer, parse_answer, units_hint
from questions.formula import compile_formula
from questions.model import LabLink, Question, Tolerance


def numeric(answer: str, unit: str, rel: float = 0.01) -> Question:
    return Question(
        id="t-001", topic="t", kind="numeric", prompt="?", explanation="!",
        lab=LabLink("kv-bytes", 1), difficulty=1, source=Path("t.toml"), unit=unit,
        tolerance=Tolerance(rel=rel), answer=compile_formula(answer),
    )


@pytest.mark.parametrize(("text", "unit"), [("5 m", "min"), ("2.5m", "s"), ("30m", "ms")])
def test_bare_m_on_a_time_question_is_reasked_not_read_as_million(text: str, unit: str) -> None:
    """'5 m' for 5 minutes used to be read as 5 million minutes and graded wrong."""
    with pytest.raises(Reask, match="ambiguous"):
        parse_answer(text, unit)
    assert check_answer(numeric("5", unit), text).reask


def test_m_still_means_million_where_the_unit_is_not_a_time() -> None:
    assert parse_answer("1.5m", "tokens") == 1.5e6
    assert parse_answer("$1.5m", "$") == 1.5e6
    assert parse_answer("3 min", "s") == 180.0


@pytest.mark.parametrize(("text", "unit", "value"), [
    ("42 ms.", "ms", 42.0),
    ("42ms,", "ms", 42.0),
    ("1,000.", "", 1000.0),
    ("25 ms/token", "ms", 25.0),
    ("25 ms/tok", "ms", 25.0),
    ("0.025 s/token", "ms", 25.0),
])
def test_sentence_punctuation_and_per_token_times_are_read(text: str, unit: str,
                                                          value: float) -> None:
    assert parse_answer(text, unit) == pytest.approx(value)


@pytest.mark.parametrize("unit", ["%", "$", "ms", "tok/s", "", "x"])
def test_no_kib_vs_kb_hint_where_the_unit_has_no_bytes(unit: str) -> None:
    """A 4.9% miss on a money or time question is a wrong answer, not a KiB/KB slip."""
    outcome = check_answer(numeric("100", unit), "104.86")
    assert not outcome.correct and outcome.hint == "4.9% too high"  # a near miss, no units


def test_kib_vs_kb_hint_is_kept_for_sizes_and_powers_of_ten_everywhere() -> None:
    assert "1024/1000" in (check_answer(numeric("100", "GiB"), "107.374").hint or "")
    assert "1024/1000" in (check_answer(numeric("100", "GB/s"), "97.6563").hint or "")
    assert "1,000×" in (check_answer(numeric("100", "ms"), "0.1").hint or "")
    assert units_hint(100.0, 104.8576) is not None  # the bare helper is unit-blind


def test_mcq_numeric_choice_text_and_position_disagree_is_reasked() -> None:
    """Choices '1'..'4' shuffled: typing '2' could be the value 2 or position B."""
    q = Question(
        id="t-002", topic="t", kind="mcq", prompt="How many?", explanation="!",
        lab=LabLink("kv-bytes", 1), difficulty=1, source=Path("t.toml"),
        choices=("1", "2", "4", "8"), correct=1,
    )
    for seed in range(20):
        inst = q.draw(seed)
        where_2 = inst.choices.index("2")
        outcome = check_answer(inst, "2")
        if where_2 == 1:  # both readings agree
            assert outcome.graded and outcome.chosen_index == 1
        else:
            assert outcome.reask and "letter" in outcome.message
        assert check_answer(inst, "ABCD"[where_2]).correct


@pytest.mark.parametrize(("text", "unit"), [("1" * 400, ""), ("1e300T", ""), ("1e300 PB", "B")])
def test_a_number_too_big_for_a_float_is_reasked_not_graded_as_infinity(text: str,
                                                                        unit: str) -> None:
    with pytest.raises(Reask, match="out of range"):
        parse_answer(text, unit)
    assert check_answer(numeric("5", unit), text).reask


def test_a_ten_percent_miss_on_a_gib_question_is_not_called_a_units_slip() -> None:
    """0.5 for 0.549 GiB (a plain arithmetic miss) used to get 'off by (1024/1000)^4 — check
    your units': a GiB answer can only be off by up to (1024/1000)^3 (GiB vs GB)."""
    assert check_answer(numeric("0.549316", "GiB"), "0.5").hint == "9.0% too low"
    assert "(1024/1000)^3" in (check_answer(numeric("1", "GiB"), "1.073741824").hint or "")
    assert "1024/1000" in (check_answer(numeric("100", "B"), "102.4").hint or "")


@pytest.mark.parametrize(("text", "unit", "value"), [
    ("USD 3", "$", 3.0), ("USD 1,125", "$", 1125.0), ("US$ 3", "$", 3.0),
    ("40 percent", "%", 40.0), ("40 pct", "%", 40.0), ("40 percent", "", 0.4),
])
def test_currency_words_before_the_number_and_percent_words(text: str, unit: str,
                                                            value: float) -> None:
    assert parse_answer(text, unit) == pytest.approx(value)


_TYPED = st.text(alphabet=st.sampled_from(list("0123456789.,eE+-$%kKMBGTmiIbsx /×µ ~≈()tokreqUSD")),
                 max_size=14)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(_TYPED, st.text(max_size=12)),
       unit=st.sampled_from(["", "%", "x", "$", "ms", "s", "GiB", "GB", "KiB", "tok/s",
                             "Gb/s", "tokens", "FLOP/B"]))
@pytest.mark.slow
def test_any_typed_text_is_read_as_a_finite_number_or_reasked(text: str, unit: str) -> None:
    """Nothing a learner types crashes the checker or is graded as nan/inf."""
    try:
        value = parse_answer(text, unit)
    except Reask:
        return
    assert math.isfinite(value)


def test_a_fraction_is_reasked_with_a_hint_to_type_a_decimal() -> None:
    with pytest.raises(Reask, match=r"as a decimal, e\.g\. 0\.333"):
        parse_answer("1/3", "")


@pytest.mark.parametrize("text", ["1 234", "1 000 000", "3\u2009000"])
def test_space_separated_thousands_are_reasked_with_the_right_advice(text: str) -> None:
    with pytest.raises(Reask, match="no spaces inside a number"):
        parse_answer(text, "")
