"""Missed questions suggest their lab: a wrong answer to a question whose lab level the
learner has not passed says "Practise this in the lab: dojo lab start ID --level N", in the
feedback and the session summary; once the level is passed (or for a right answer) it does not."""

from __future__ import annotations

from trainer.core.services import Services
from trainer.core.session import Item, Session


def _wrong(item: Item) -> str | int:
    if item.is_mcq:
        assert item.instance.correct_index is not None
        return (item.instance.correct_index + 1) % len(item.instance.choices)
    return f"{(item.instance.answer or 1) * 10:g}"


def _right(item: Item) -> str | int:
    if item.is_mcq:
        assert item.instance.correct_index is not None
        return item.instance.correct_index
    return f"{item.instance.answer:g}"


def _kv_session(services: Services) -> Session:
    session = services.start_cram()
    while session.current is not None and (
            session.current.question.lab.exercise != "kv-bytes"
            or session.current.instance.is_case):
        session.drop_current("bury")
    assert session.current is not None, "the fixture bank links a question to kv-bytes L1"
    return session


def test_a_miss_suggests_the_unpassed_lab_level(services: Services) -> None:
    session = _kv_session(services)
    feedback = session.submit(_wrong(session.current))  # type: ignore[arg-type]
    assert not feedback.correct
    assert feedback.lab == "Practise this in the lab: dojo lab start kv-bytes --level 1"
    session.grade(1).result()
    assert session.summary().labs == [feedback.lab]


def test_no_suggestion_for_a_right_answer_or_a_passed_level(services: Services) -> None:
    session = _kv_session(services)
    assert session.submit(_right(session.current)).lab == ""  # type: ignore[arg-type]
    services.store.record_lab_attempt("kv-bytes", 1, "cpu", True, [], {}, 1.0)
    session = _kv_session(services)
    feedback = session.submit(_wrong(session.current))  # type: ignore[arg-type]
    assert not feedback.correct and feedback.lab == ""
    session.grade(1).result()
    assert session.summary().labs == []
