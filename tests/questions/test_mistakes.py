"""Every named mistake in the bank is a value the checker recognises and names."""

from __future__ import annotations

import pytest

from questions.model import Question
from tests.questions.conftest import builtin_bank

from .feeding import allowed_coincidences, feed_mistakes

BANK = builtin_bank()
NUMERIC = [q for q in BANK.questions if q.kind == "numeric"]
MCQ = [q for q in BANK.questions if q.kind == "mcq"]


def test_the_bank_loads_with_every_question() -> None:
    assert BANK.errors == []
    assert NUMERIC and MCQ


@pytest.mark.parametrize("question", NUMERIC, ids=[q.id for q in NUMERIC])
def test_every_numeric_question_names_at_least_one_mistake(question: Question) -> None:
    assert question.mistakes
    assert all(m.says and "\n" not in m.says for m in question.mistakes)


@pytest.mark.parametrize("question", MCQ, ids=[q.id for q in MCQ])
def test_every_distractor_has_a_why_and_the_key_none(question: Question) -> None:
    assert question.correct is not None and len(question.why) == len(question.choices)
    for i, why in enumerate(question.why):
        assert (why == "") == (i == question.correct), (question.id, i, why)


@pytest.mark.slow
@pytest.mark.parametrize("question", NUMERIC, ids=[q.id for q in NUMERIC])
def test_each_mistake_typed_on_200_draws_is_graded_wrong_and_named(question: Question) -> None:
    fed = feed_mistakes(question, 200)
    assert fed.failures == [], "\n".join(fed.failures[:5])
    allowed = allowed_coincidences(question, fed.draws)
    assert all(n <= allowed for n in fed.coincided.values()), fed.coincided


@pytest.mark.parametrize("question", MCQ, ids=[q.id for q in MCQ])
def test_each_distractor_shows_its_why_and_records_its_file_index(question: Question) -> None:
    from questions.answers import check_answer

    for seed in range(4):
        instance = question.draw(seed)
        for shown, text in enumerate(instance.choices):
            original = instance.order[shown]
            outcome = check_answer(instance, "ABCD"[shown])
            assert outcome.chosen_index == shown
            assert outcome.accepted == f"accepted: {instance.correct_letter}"
            if original == question.correct:
                assert outcome.correct and outcome.mistake_id is None and outcome.diagnosis is None
            else:
                assert not outcome.correct
                assert outcome.mistake_id == f"choice:{original}"
                assert outcome.diagnosis == question.why[original]
            by_text = check_answer(instance, text.upper())  # the choice's text, any case
            assert by_text.chosen_index == shown
