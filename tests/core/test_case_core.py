"""Case studies in a session, headless: step by step, one review per card, undo, Today counts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from questions.answers import Reask
from questions.model import Instance
from tests.tui.conftest import FIXTURES
from trainer.core.services import Services
from trainer.core.session import ALL_GRADES, Session
from trainer.core.stats import describe_mistake

CASES = FIXTURES / "cases"
CASE_ID = "case-studies-001"


@pytest.fixture
def services(open_services: Callable[..., Services]) -> Services:
    return open_services(CASES)


def _to_case(session: Session) -> Session:
    """Bury the single-answer cards ahead of the case card."""
    while session.current is not None and not session.current.instance.is_case:
        session.drop_current("bury")
    assert session.current is not None and session.current.question_id == CASE_ID
    return session


def _right(step: Instance) -> str:
    assert step.answer is not None
    return f"{step.answer:g}"


def _mistake(step: Instance, mistake_id: str) -> str:
    value = dict((m.id, v) for m, v in step.mistake_values())[mistake_id]
    return f"{value:g}"


def test_today_counts_and_the_session_include_the_case(services: Services) -> None:
    assert services.bank.get(CASE_ID) is not None and services.bank.left_out == {}
    assert services.today().new == 4  # 3 single-answer cards + the case
    session = services.start_session()
    assert CASE_ID in [i.question_id for i in session._state.queue]
    assert CASE_ID in [i.question_id for i in services.start_cram("case-studies")._state.queue]


def test_every_step_right_suggests_4_and_is_recorded_once(services: Services) -> None:
    session = _to_case(services.start_session())
    case = session.case
    assert case is not None and case.total == 5 and session.feedback is None
    with pytest.raises(RuntimeError):  # a case is not answered in one go
        session.submit("1")
    for k, step in enumerate(case.instance.steps):
        assert case.step is step and case.index == k
        verdict = case.submit(_right(step))
        assert verdict.correct and verdict.revealed and verdict.accepted.startswith("accepted")
        assert verdict.explanation == step.explanation
        assert not session.can_override
        feedback = session.next_step()
        assert (feedback is None) == (k < case.total - 1)
    assert feedback is not None
    assert feedback.suggested == 4 and feedback.default_grade == 4
    assert feedback.grades == ALL_GRADES and feedback.correct and feedback.mistake_id is None
    assert feedback.explanation == case.instance.explanation
    assert not session.can_override  # the steps are graded; the card is not overridden whole
    session.grade(5)  # the learner may raise the suggestion
    (logged,) = services.store.history(CASE_ID)
    assert (logged.quality, logged.correct, logged.mode) == (5, True, "review")
    assert logged.answer_text.count("|") == case.total - 1
    assert services.store.card(CASE_ID).interval == 1
    assert session.current is None or session.current.question_id != CASE_ID


def test_one_wrong_step_suggests_3_and_records_its_named_mistake(services: Services) -> None:
    session = _to_case(services.start_session())
    case = session.case
    assert case is not None
    for k, step in enumerate(case.instance.steps):
        typed = _mistake(step, "forgot-k-and-v") if k == 1 else _right(step)
        verdict = case.submit(typed)
        assert verdict.correct == (k != 1)
        if k == 1:
            assert "forgot the factor 2" in verdict.diagnosis
            assert verdict.revealed == "128 KiB"
            assert session.can_override
        feedback = session.next_step()
    assert feedback is not None and feedback.suggested == 3 and not feedback.correct
    assert feedback.mistake_id == "kv_kib:forgot-k-and-v"
    session.grade(feedback.default_grade)
    (logged,) = services.store.history(CASE_ID)
    assert (logged.quality, logged.correct, logged.mistake_id) == (3, False,
                                                                   "kv_kib:forgot-k-and-v")
    question = services.bank.get(CASE_ID)
    assert describe_mistake(question, "kv_kib:forgot-k-and-v") == (
        "kv_kib: forgot the factor 2 for K and V")
    assert describe_mistake(question, "kv_kib:no-such") == "kv_kib:no-such"


def test_two_and_all_wrong_suggest_2_and_1_and_any_grade_can_be_chosen(
    services: Services,
) -> None:
    for wrong, suggested in ((2, 2), (5, 1)):
        session = _to_case(services.start_cram("case-studies"))
        case = session.case
        assert case is not None
        for k, step in enumerate(case.instance.steps):
            assert step.answer is not None
            case.submit(f"{step.answer * 7:g}" if k < wrong else _right(step))
            feedback = session.next_step()
        assert feedback is not None and feedback.suggested == suggested
        with pytest.raises(ValueError):
            session.grade(6)
        session.grade(4)  # the learner overrules the suggestion
    assert [r.quality for r in services.store.history(CASE_ID)] == [4, 4]


def test_an_unreadable_answer_is_reasked_and_grades_nothing(services: Services) -> None:
    session = _to_case(services.start_session())
    case = session.case
    assert case is not None
    with pytest.raises(Reask, match="can't read"):
        case.submit("about fifteen")
    assert case.verdicts == [] and case.index == 0 and case.step is case.instance.steps[0]
    with pytest.raises(RuntimeError):  # no moving on without a graded answer
        session.next_step()
    for step in case.instance.steps[:2]:
        case.submit(_right(step))
        session.next_step()
    with pytest.raises(Reask, match="whole number"):  # step 3 counts seats
        case.submit("57.5")
    assert case.index == 2 and len(case.verdicts) == 2
    assert case.submit(_right(case.instance.steps[2])).correct
    assert services.store.history(CASE_ID) == []


def test_typo_override_counts_the_current_step_right(services: Services) -> None:
    session = _to_case(services.start_session())
    case = session.case
    assert case is not None
    first = case.instance.steps[0]
    assert not case.submit(_mistake(first, "decimal-gb")).correct
    assert session.can_override
    verdict = case.override()
    assert verdict.correct and verdict.overridden and verdict.mistake_id is None
    assert not session.can_override
    with pytest.raises(RuntimeError):
        case.override()
    session.next_step()
    for step in case.instance.steps[1:]:
        case.submit(_right(step))
        feedback = session.next_step()
    assert feedback is not None and feedback.suggested == 4 and feedback.overridden
    session.grade(4)
    (logged,) = services.store.history(CASE_ID)
    assert logged.overridden and logged.correct and logged.mistake_id is None


def test_undo_brings_the_case_back_from_its_first_step(services: Services) -> None:
    session = _to_case(services.start_session())
    before = services.store.card(CASE_ID)
    case = session.case
    assert case is not None
    item = session.current
    for step in case.instance.steps:
        case.submit(_right(step))
        session.next_step()
    session.grade(4)
    assert len(services.store.history(CASE_ID)) == 1
    assert session.undo() is item
    assert services.store.history(CASE_ID) == [] and services.store.card(CASE_ID) == before
    again = session.case
    assert again is not None and again.index == 0 and again.verdicts == []
    assert again.instance is case.instance  # the same draw is asked again
    assert session.feedback is None


def test_a_card_left_mid_case_starts_over_and_records_nothing(services: Services) -> None:
    session = _to_case(services.start_session())
    case = session.case
    assert case is not None
    case.submit(_right(case.instance.steps[0]))
    session.drop_current("bury")
    assert services.store.history(CASE_ID) == []
    assert services.store.card(CASE_ID).buried_until is not None


@pytest.mark.slow  # loads the built-in bank twice (~3 s each)
def test_due_and_the_app_agree_on_the_case_cards(dojo_home: Path) -> None:
    """`dojo due` loads the same kinds as the app: its sync keeps the case cards the app serves
    (the single-answer default would retire them) and its counts are the app's."""
    from click.testing import CliRunner

    from trainer.cli import main

    services = Services.open()
    try:
        cases = [q.id for q in services.bank.questions if q.kind == "case"]
        assert len(cases) >= 20
        result = CliRunner().invoke(main, ["due", "--json", "--no-list"])
        assert result.exit_code == 0, result.output
        due = json.loads(result.output)
        today = services.today()
        assert (due["reviews"], due["new"]) == (today.due, today.new)
        assert not any(services.store.card(i).retired for i in cases)
    finally:
        services.close()
