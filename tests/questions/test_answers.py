"""Answers typed the way people type them are read, converted, graded, or re-asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from questions.answers import (
    Reask,
    check_answer,
    check_choice,
    parse_answer,
    parse_choice,
    units_hint,
)
from questions.formula import compile_formula
from questions.model import LabLink, Question, Tolerance


def numeric(answer: str, unit: str, tolerance: Tolerance | None = None) -> Question:
    return Question(
        id="t-001", topic="t", kind="numeric", prompt="?", explanation="!",
        lab=LabLink("kv-bytes", 1), difficulty=1, source=Path("t.toml"), unit=unit,
        tolerance=tolerance or Tolerance(rel=0.01), answer=compile_formula(answer),
    )


@pytest.mark.parametrize(
    ("text", "unit", "value"),
    [
        ("2.53", "", 2.53),
        ("2,530", "", 2530.0),
        ("2.5e3", "", 2500.0),
        ("1.2k", "", 1200.0),
        ("3.5M", "", 3.5e6),
        ("1.5B", "", 1.5e9),
        ("-4", "", -4.0),
        ("  .5  ", "", 0.5),
        ("$1,125", "$", 1125.0),
        ("$1.2k", "$", 1200.0),
        ("1125 USD", "$", 1125.0),
        ("16.7%", "%", 16.7),
        ("16.7", "%", 16.7),
        ("0.25", "", 0.25),
        ("25%", "", 0.25),
        ("2.5x", "x", 2.5),
        ("250%", "x", 2.5),
        ("61 tok/s", "tok/s", 61.0),
        ("61tok/s", "tok/s", 61.0),
        ("1.2k tok/s", "tok/s", 1200.0),
        ("61 tokens/s", "tok/s", 61.0),
        ("320 KiB", "KiB", 320.0),
        ("320 kib", "KiB", 320.0),
        ("0.3125 MiB", "KiB", 320.0),
        ("327,680 B", "KiB", 320.0),
        ("1.25 GiB", "GiB", 1.25),
        ("1.25 GiB", "MiB", 1280.0),
        ("1 GB", "MB", 1000.0),
        ("1 GiB", "GB", 1.073741824),
        ("1.5B", "B", 1.5),
        ("27 ms", "ms", 27.0),
        ("0.027 s", "ms", 27.0),
        ("27ms", "s", 0.027),
        ("2 min", "s", 120.0),
        ("3.35 TB/s", "GB/s", 3350.0),
        ("989 TFLOP/s", "FLOP/s", 9.89e14),
        ("12 GPUs", "GPUs", 12.0),
        ("12", "GPUs", 12.0),
        ("3.5M tokens", "tokens", 3.5e6),
        ("~47", "tok/s", 47.0),
        ("\u22123", "", -3.0),
    ],
)
def test_parses_what_people_type(text: str, unit: str, value: float) -> None:
    assert parse_answer(text, unit) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "unit", "says"),
    [
        ("", "", "type a number"),
        ("abc", "", "can't read"),
        ("two", "KiB", "can't read"),
        ("1..2", "", "can't read"),
        ("2,53", "", "point for decimals"),
        ("1.2.3", "", "can't read"),
        ("12 bananas", "", "can't read the unit"),
        ("5 ms", "KiB", "can't be converted to KiB"),
        ("320 KiB", "ms", "can't be converted to ms"),
        ("61 tok/s", "$", "amount of money"),
        ("3 GB", "", "plain number"),
        ("$5", "tok/s", "can't be converted"),
        ("1e999", "", "out of range"),
    ],
)
def test_unreadable_or_incompatible_input_is_reasked(text: str, unit: str, says: str) -> None:
    with pytest.raises(Reask, match=says):
        parse_answer(text, unit)


def test_reask_is_never_graded() -> None:
    outcome = check_answer(numeric("128", "KiB"), "5 ms")
    assert outcome.reask and not outcome.graded
    assert "KiB" in outcome.message
    garbage = check_answer(numeric("128", "KiB"), "¯\\_(ツ)_/¯")
    assert garbage.reask and "can't read" in garbage.message


def test_converted_units_are_graded_against_the_question_unit() -> None:
    question = numeric("128", "KiB")
    right = check_answer(question, "131072 B")
    assert right.graded and right.correct
    assert right.expected_display == "128 KiB" and right.given_display == "128 KiB"
    wrong = check_answer(question, "100 KiB")
    assert wrong.graded and not wrong.correct and wrong.hint is None


def test_tolerance_relative_and_absolute() -> None:
    rel = numeric("2.533", "x", Tolerance(rel=0.01))
    assert check_answer(rel, "2.53").correct and check_answer(rel, "2.55").correct
    assert not check_answer(rel, "2.6").correct
    absolute = numeric("80", "requests", Tolerance(abs=0.5))
    assert check_answer(absolute, "80").correct and not check_answer(absolute, "81").correct


@pytest.mark.parametrize(
    ("expected", "unit", "typed", "says"),
    [
        ("128", "KiB", "131072", "1024/1000 and 1,000×"),  # bytes typed where KiB were asked
        ("2530", "", "2.53", "1,000×"),
        ("16.7", "%", "0.167", "100×"),
        ("4.79", "ms", "0.00479", "1,000×"),
        ("128", "KiB", "131.072", "1024/1000"),  # KB figure typed as KiB
        ("1", "GiB", "1.073741824", "(1024/1000)^3"),  # GB vs GiB
        ("320", "KiB", "327.68", "1024/1000"),
    ],
)
def test_power_of_ten_and_binary_slips_get_a_units_hint(
    expected: str, unit: str, typed: str, says: str
) -> None:
    outcome = check_answer(numeric(expected, unit), typed)
    assert outcome.graded and not outcome.correct
    assert outcome.hint is not None and "check your units" in outcome.hint
    assert says in outcome.hint


def test_no_hint_for_an_ordinary_miss_or_a_correct_answer() -> None:
    assert units_hint(2.53, 3.1) is None
    assert units_hint(100.0, -100.0) is None
    assert check_answer(numeric("2.53", ""), "2.53").hint is None


def test_a_bare_question_is_checked_against_its_seed_zero_draw() -> None:
    question = numeric("61", "tok/s")
    assert check_answer(question, "61 tok/s").correct


@pytest.mark.parametrize(
    ("text", "index"),
    [("a", 0), ("B", 1), ("c", 2), ("D", 3), ("1", 0), ("4", 3), ("(b)", 1), ("c.", 2),
     (" d ", 3)],
)
def test_choice_letters_and_numbers(text: str, index: int) -> None:
    assert parse_choice(text) == index


@pytest.mark.parametrize("text", ["e", "5", "0", "ab", "", "yes"])
def test_choice_out_of_range_is_reasked(text: str) -> None:
    with pytest.raises(Reask, match="A-D"):
        parse_choice(text)


def _mcq(choices: list[str], correct: int = 0) -> Question:
    return Question(
        id="m-001", topic="t", kind="mcq", prompt="Which?", explanation="Misconception: x",
        lab=None, difficulty=1, source=Path("t.toml"), choices=tuple(choices), correct=correct,
        why=tuple("" if i == correct else f"why {i}" for i in range(len(choices))),
    )


def test_a_picked_choice_is_graded_by_its_index_not_by_a_letter() -> None:
    # choices whose text reads as a letter: a pick turned into a letter and parsed back would
    # be "the text of one choice and the position of another" (re-asked)
    instance = _mcq(["B", "A", "D", "C"]).draw(0)
    ambiguous = [i for i in range(4) if check_answer(instance, "ABCD"[i]).reask]
    assert ambiguous  # the letter path cannot grade these picks
    for i in range(4):
        outcome = check_choice(instance, i)
        assert not outcome.reask
        assert outcome.chosen_index == i
        assert outcome.correct == (i == instance.correct_index)


def test_a_picked_index_outside_the_choices_is_reasked() -> None:
    instance = _mcq(["one", "two", "three", "four"]).draw(0)
    for index in (-1, 4):
        outcome = check_choice(instance, index)
        assert outcome.reask
        assert outcome.message == "answer with a letter A-D (or a-d, 1-4)"
