"""Answers as people type them: money to the cent, ratios in words, rates per second, and a
right answer that a named mistake also rounds to at the digits typed (re-asked, never diagnosed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from questions.answers import check_answer
from questions.bank import load_bank
from questions.formula import FormulaError, compile_formula
from questions.loader import parse_file
from questions.model import Instance

MONEY_PACK = '''
[topic]
id = "cents"
title = "Cents"
note = "Money typed to the cent."

[[question]]
id = "cents-001"
kind = "numeric"
difficulty = 1
prompt = "A request costs {c} hundredths of a cent per token over {n} tokens. Cost in **$**?"
explanation = "{n} × {c} ÷ 10,000 = **${answer}**."
unit = "$"
tolerance = { rel = 0.005 }
answer = "n * c / 10000"
[question.params]
c = { choices = [1] }
n = { choices = [906, 30, 45] }
[[question.mistake]]
id = "ten-times"
formula = "n * c / 1000"
says = "divided by 1,000"
'''


@pytest.fixture(scope="module")
def bank() -> object:
    return load_bank()


def _money_instances(tmp_path: Path) -> dict[int, Instance]:
    path = tmp_path / "cents.toml"
    path.write_text(MONEY_PACK)
    parsed = parse_file(path, None)
    assert parsed.problems == []
    question = parsed.questions[0]
    return {n: question.instance({"c": 1, "n": n}) for n in (906, 30, 45)}


def test_money_typed_to_the_cent_is_right_when_it_is_the_answer_rounded_to_the_cent(
        tmp_path: Path) -> None:
    inst = _money_instances(tmp_path)[906]  # $0.0906: $0.09 moves it 0.7%, past the tolerance
    assert check_answer(inst, "$0.09").correct
    assert check_answer(inst, "0.09").correct
    assert check_answer(inst, "$0.0906").correct
    wrong = check_answer(inst, "$0.08")
    assert wrong.graded and not wrong.correct
    assert "or $0.09 to the cent" in wrong.accepted
    assert not check_answer(inst, "$0.090001").correct  # more digits than cents: tolerance rules


def test_a_sub_half_cent_amount_is_not_right_as_zero(tmp_path: Path) -> None:
    inst = _money_instances(tmp_path)[30]  # $0.003
    outcome = check_answer(inst, "$0.00")
    assert outcome.graded and not outcome.correct
    assert check_answer(inst, "$0.003").correct


def test_a_named_mistake_is_still_named_beside_the_cent_rule(tmp_path: Path) -> None:
    inst = _money_instances(tmp_path)[45]  # $0.0045; the mistake gives $0.045
    assert check_answer(inst, "$0.045").mistake_id == "ten-times"
    assert check_answer(inst, "$0.0045").correct


@pytest.mark.slow
def test_every_money_question_and_seed_takes_its_answer_to_the_cent(bank: object) -> None:
    money = [q for q in bank.questions  # type: ignore[attr-defined]
             if q.kind == "numeric" and q.unit == "$"]
    assert len(money) >= 5
    tried = 0
    for question in money:
        for seed in range(200):
            inst = question.draw(seed)
            cents = round(inst.answer, 2)
            if cents == 0:
                continue
            outcome = check_answer(inst, f"${cents:.2f}")
            tried += 1
            assert outcome.correct or outcome.reask, (question.id, seed, inst.answer)
    assert tried >= 1000


def test_a_right_answer_that_a_mistake_shares_at_the_digits_typed_is_re_asked(
        bank: object) -> None:
    """case-studies-009 seed 0: 10.275 s, and the double-counted TPOT gives 10.3 s."""
    step = bank.get("case-studies-009").draw(0).steps[0]  # type: ignore[attr-defined]
    assert step.answer == pytest.approx(10.275)
    outcome = check_answer(step, "10.3")
    assert outcome.reask and outcome.mistake_id is None
    assert outcome.message == ("10.3 s is the answer to the digits you typed, and also what a "
                               "common mistake gives: type more digits")
    assert check_answer(step, "10.275").correct
    assert check_answer(step, "10.30").mistake_id == "double-count-first-token"  # 4 figures
    assert check_answer(step, "9.975").mistake_id == "forgot-ttft"
    # fewer than 3 figures is too coarse to be the answer: the mistake is named (latency-001)
    coarse = bank.get("latency-001").instance(  # type: ignore[attr-defined]
        {"ttft": 200, "tpot": 50, "n": 100})
    assert check_answer(coarse, "5.2").mistake_id == "double-count-first-token"


def test_a_ratio_typed_as_times_and_a_rate_typed_per_second(bank: object) -> None:
    ratio = bank.get("cuda-graphs-002").draw(0)  # type: ignore[attr-defined]
    assert check_answer(ratio, f"{ratio.answer:.4g} times").correct
    assert check_answer(ratio, f"{ratio.answer:.4g}x").correct
    rate = bank.get("benchmarking-001").draw(0)  # type: ignore[attr-defined]
    for typed in (f"{rate.answer}/s", f"{rate.answer} /s", f"{rate.answer} per second",
                  f"{rate.answer}/sec"):
        assert check_answer(rate, typed).correct, typed
    tokens = bank.get("benchmarking-006").draw(0).steps[1]  # type: ignore[attr-defined]
    assert check_answer(tokens, f"{tokens.answer:.6g}/s").correct
    time = bank.get("reasoning-001").draw(0)  # type: ignore[attr-defined]
    assert check_answer(time, "25.6/s").reask  # a rate is not a time


@pytest.mark.parametrize("formula", ["a if a > b else b", "a > b", "a and b"])
def test_a_formula_with_a_conditional_says_what_to_use_instead(formula: str) -> None:
    with pytest.raises(FormulaError, match="no conditionals or comparisons: write a choice with "
                                           "min, max, ceil or floor"):
        compile_formula(formula)
