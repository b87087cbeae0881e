"""Seeded draws: same seed, same instance; fresh numbers across seeds; the MCQ key follows the
shuffle; rendered text is filled and the answer matches an independent computation."""

from __future__ import annotations

import math

import pytest

from questions.answers import check_answer
from questions.bank import Bank, load_bank
from questions.render import RenderError, format_value, placeholders, render

from .conftest import VALID


@pytest.fixture(scope="module")
def bank() -> Bank:
    loaded = load_bank([VALID])
    assert not loaded.errors
    return loaded


def test_same_seed_same_instance(bank: Bank) -> None:
    for question in bank.questions:
        a, b = question.draw(12345), question.draw(12345)
        assert (a.values, a.prompt, a.explanation, a.answer, a.choices, a.correct_index) == \
            (b.values, b.prompt, b.explanation, b.answer, b.choices, b.correct_index)
        assert a.seed == 12345


def test_different_seeds_draw_fresh_numbers(bank: Bank) -> None:
    question = bank.get("fixture-spec-001")
    assert question is not None and question.parameterised
    answers = {question.draw(seed).answer for seed in range(50)}
    assert len(answers) > 20


def test_kv_answer_matches_an_independent_computation(bank: Bank) -> None:
    question = bank.get("fixture-kv-001")
    assert question is not None
    for seed in range(100):
        inst = question.draw(seed)
        v = inst.values
        expected_kib = 2 * v["layers"] * v["kv_heads"] * v["head_dim"] * v["bytes"] / 1024
        assert inst.answer == pytest.approx(expected_kib)
        assert f"{v['layers']} layers" in inst.prompt
        assert v["dtype_name"] == {1: "FP8", 2: "BF16"}[v["bytes"]]
        assert v["dtype_name"] in inst.prompt
        assert f"**{expected_kib:,.0f} KiB**" in inst.explanation
        assert "{" not in inst.prompt and "}" not in inst.explanation
        assert check_answer(inst, f"{expected_kib * 1024:.0f} B").correct
        assert not check_answer(inst, f"{expected_kib * 1.1:.3f}").correct


def test_speculative_answer_matches_closed_form_over_many_draws(bank: Bank) -> None:
    question = bank.get("fixture-spec-001")
    assert question is not None
    for seed in range(200):
        inst = question.draw(seed)
        a, g, base = (float(inst.values[k]) for k in ("alpha", "gamma", "base"))
        tokens = sum(a**i for i in range(int(g) + 1))  # 1 + a + ... + a^g
        assert inst.answer == pytest.approx(tokens * base)
        assert 0.5 <= a <= 0.9 and g in (2, 3, 4, 5) and 20 <= base <= 40
        assert round(a / 0.05) * 0.05 == pytest.approx(a)  # on the step grid
        assert check_answer(inst, f"{inst.answer:.1f} tok/s").correct


def test_cases_pick_consistent_rows(bank: Bank) -> None:
    question = bank.get("fixture-kv-003")
    assert question is not None
    seen = set()
    for seed in range(60):
        inst = question.draw(seed)
        row = (inst.values["model"], inst.values["kv_kib"])
        assert row in {("Llama-3-8B", 128), ("Llama-2-13B", 800)}
        seen.add(row)
        per_request_gib = row[1] * inst.values["context"] / 1024**2
        assert inst.answer == math.floor(inst.values["free_gib"] / per_request_gib)
        assert row[0] in inst.prompt
    assert len(seen) == 2


def test_mcq_shuffle_keeps_the_key(bank: Bank) -> None:
    question = bank.get("fixture-kv-002")
    assert question is not None and question.correct is not None
    right_text = question.choices[question.correct]
    orders = set()
    for seed in range(40):
        inst = question.draw(seed)
        assert sorted(inst.choices) == sorted(question.choices)
        assert inst.correct_index is not None
        assert inst.choices[inst.correct_index] == right_text
        assert inst.order[inst.correct_index] == question.correct
        letter = "abcd"[inst.correct_index]
        assert check_answer(inst, letter).correct
        assert check_answer(inst, str(inst.correct_index + 1)).correct
        wrong = "abcd"[(inst.correct_index + 1) % 4].upper()
        outcome = check_answer(inst, wrong)
        assert outcome.graded and not outcome.correct
        assert right_text in outcome.expected_display
        orders.add(inst.choices)
    assert len(orders) > 5  # actually shuffled


def test_mcq_garbage_is_reasked(bank: Bank) -> None:
    question = bank.get("fixture-kv-002")
    assert question is not None
    outcome = check_answer(question.draw(0), "z")
    assert outcome.reask and "A-D" in outcome.message


def test_render_fills_specs_and_literal_braces() -> None:
    text = render("{n:,} B, {x:.2f}, {p:.1%}, {{json}}, {name}", {
        "n": 131072, "x": 2.5333, "p": 0.167, "name": "BF16",
    })
    assert text == "131,072 B, 2.53, 16.7%, {json}, BF16"
    assert format_value(32.0, "") == "32"  # whole floats print like ints
    assert format_value(32.0, "d") == "32"


@pytest.mark.parametrize(
    "template",
    ["{x.__class__}", "{x[0]}", "{x!r}", "{}", "{x:{y}}", "{unclosed", "close}"],
)
def test_render_rejects_anything_but_plain_names(template: str) -> None:
    with pytest.raises(RenderError):
        placeholders(template)
    with pytest.raises(RenderError):
        render(template, {"x": 1, "y": 2})


def test_render_reports_unknown_names_and_bad_specs() -> None:
    with pytest.raises(RenderError, match="unknown placeholder"):
        render("{missing}", {})
    with pytest.raises(RenderError, match="x:d"):
        render("{x:d}", {"x": 2.5})


def test_instances_compare_by_content_and_questions_are_hashable(bank: Bank) -> None:
    question = bank.get("fixture-kv-001")
    assert question is not None
    assert question.draw(3) == question.draw(3)
    assert question.draw(3) != question.draw(4)  # another seed is another instance
    assert len({question, question}) == 1 and len({question.draw(3), question.draw(3)}) == 1
