"""A typed unit of the question's family is converted (a kWh question takes Wh and kJ); one
that cannot be converted is re-asked with the units that are accepted."""

from __future__ import annotations

import pytest

from questions.answers import Reask, check_answer, parse_answer
from questions.bank import load_bank


@pytest.mark.parametrize(("text", "kwh"), [("194 Wh", 0.194), ("700 kJ", 700 / 3600),
                                           ("0.7 MJ", 0.7 / 3.6), ("700,000 J", 700 / 3600),
                                           ("0.000194 MWh", 0.194), ("194 wh", 0.194)])
def test_an_energy_answer_takes_every_energy_unit(text: str, kwh: float) -> None:
    assert parse_answer(text, "kWh") == pytest.approx(kwh)


@pytest.mark.parametrize(("text", "unit", "listed"), [
    ("5 GB", "kWh", "kWh, Wh, MWh, GWh, J, kJ, MJ, GJ"),
    ("5 GB", "ms", "ms, ns, us, s, min, h, day"),
    ("3 GB", "tok/s", "tok/s, tok/ms, tok/min"),
    ("5 s", "", "a plain number, x or %"),
])
def test_an_unconvertible_unit_is_reasked_with_the_accepted_units(text: str, unit: str,
                                                                  listed: str) -> None:
    with pytest.raises(Reask) as caught:
        parse_answer(text, unit)
    assert f"type it in {listed}" in str(caught.value)


@pytest.mark.slow
def test_a_kwh_question_in_the_bank_grades_wh_and_kj() -> None:
    bank = load_bank(draws=0)
    question = next(q for q in bank.questions if q.kind == "numeric" and q.unit == "kWh")
    instance = question.draw(0)
    assert instance.answer is not None
    wh, kj = instance.answer * 1e3, instance.answer * 3600
    assert check_answer(instance, f"{wh:.6g} Wh").correct
    assert check_answer(instance, f"{kj:.6g} kJ").correct
    outcome = check_answer(instance, "5 GB")
    assert outcome.reask and "Wh" in outcome.message and "kJ" in outcome.message
