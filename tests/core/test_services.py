"""The session rules, headless: queue order, answers, re-drill, undo, cram, bury/suspend."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from questions.answers import Reask
from tests.questions.conftest import VALID
from trainer.core.services import Services
from trainer.core.session import Feedback, Item, Session


def _answer_right(session: Session) -> Feedback:
    item = session.current
    assert item is not None
    inst = item.instance
    answer: str | int = inst.correct_index if item.is_mcq else f"{inst.answer}"
    result = session.submit(answer)
    assert isinstance(result, Feedback) and result.correct, result
    return result


def _answer_wrong(session: Session) -> Feedback:
    item = session.current
    assert item is not None
    inst = item.instance
    answer: str | int = (inst.correct_index + 1) % 4 if item.is_mcq else f"{inst.answer * 3}"
    result = session.submit(answer)
    assert isinstance(result, Feedback) and not result.correct, result
    return result


def _current(session: Session) -> Item:
    assert session.current is not None
    return session.current


def test_first_day_queue_has_every_new_card_and_first_run(services: Services) -> None:
    today = services.today()
    assert today.first_run
    assert (today.due, today.new, today.redrill) == (0, 3, 0)
    session = services.start_session()
    assert [(i.mode, i.new) for i in session._state.queue] == [("review", True)] * 3
    assert {i.question_id for i in session._state.queue} == {
        "kv-cache-001", "kv-cache-002", "batching-001"}


def test_mcq_right_and_wrong_are_logged_with_the_answer_and_draw(services: Services) -> None:
    session = services.start_session()
    while not _current(session).is_mcq:
        session.drop_current("bury")
    first = _current(session)
    fb = _answer_right(session)
    assert fb.default_grade == 4 and fb.grades == (3, 4, 5)
    session.grade(4)
    while not _current(session).is_mcq:
        session.drop_current("bury")
    second = _current(session)
    fb = _answer_wrong(session)
    assert fb.default_grade == 1 and fb.grades == (0, 1, 2)
    assert fb.expected.startswith(chr(65 + second.instance.correct_index))
    session.grade(1)
    (right,) = services.store.history(first.question_id)
    assert right.correct and right.quality == 4 and right.mode == "review"
    assert right.params is not None and right.params["seed"] == first.seed
    (wrong,) = services.store.history(second.question_id)
    assert not wrong.correct and wrong.quality == 1
    assert wrong.answer_text.startswith(fb.given[:2])
    assert services.store.card(first.question_id).interval == 1
    assert services.store.card(second.question_id).lapses == 1


def test_numeric_garbage_is_reasked_never_graded(services: Services) -> None:
    session = services.start_session()
    while _current(session).is_mcq:
        session.drop_current("bury")
    item = _current(session)
    with pytest.raises(Reask, match="can't read"):
        session.submit("about twelve")
    assert session.feedback is None
    fb = session.submit(f"{item.instance.answer} KiB")
    assert isinstance(fb, Feedback) and fb.correct
    session.grade(5)
    assert [r.quality for r in services.store.history(item.question_id)] == [5]


def test_redrill_repeats_a_card_until_graded_4(services: Services) -> None:
    session = services.start_session()
    failed = _current(session).question_id
    _answer_wrong(session)
    session.grade(2)
    while _current(session).question_id != failed:
        _answer_right(session)
        session.grade(4)
    item = _current(session)
    assert item.mode == "redrill" and item.question_id == failed
    assert [q.question_id for q in services.store.today_queue().redrill] == [failed]
    _answer_right(session)
    session.grade(3)  # right but hard: still below 4, so it comes back once more
    assert _current(session).question_id == failed and _current(session).mode == "redrill"
    _answer_right(session)
    session.grade(4)
    assert session.current is None
    assert services.store.today_queue().redrill == ()
    modes = [r.mode for r in services.store.history(failed)]
    assert modes == ["review", "redrill", "redrill"]
    summary = session.summary()
    assert summary.answered == 5 and summary.redrilled == 2 and summary.correct == 4
    assert summary.left_today == 0
    assert services.start_session().summary().left_today == 0  # nothing queued any more


def test_undo_several_steps_restores_cards_and_brings_them_back(services: Services) -> None:
    before = {c.question_id: c for c in services.store.cards()}
    session = services.start_session()
    shown = []
    for _ in range(3):
        item = _current(session)
        shown.append((item.question_id, item.seed))
        _answer_right(session)
        session.grade(5)
    assert session.current is None
    for question_id, seed in reversed(shown):
        item = session.undo()
        assert item is not None and (item.question_id, item.seed) == (question_id, seed)
        assert _current(session).question_id == question_id
    assert session.undo() is None
    after = {c.question_id: c for c in services.store.cards()}
    assert after == before
    assert all(services.store.history(q) == [] for q in before)
    assert session.answered == 0


def test_cram_leaves_the_schedule_unchanged(services: Services) -> None:
    session = services.start_session()
    _answer_right(session)
    session.grade(4)  # one scheduled review so there is a schedule to protect
    before = services.store.cards()
    forecast = services.store.forecast(30)
    cram = services.start_cram("kv-cache")
    assert {i.question_id for i in cram._state.queue} == {"kv-cache-001", "kv-cache-002"}
    _answer_wrong(cram)
    cram.grade(0)
    while cram.current is not None:
        _answer_right(cram)
        cram.grade(5)
    assert services.store.cards() == before
    assert services.store.forecast(30) == forecast
    logged = [r for c in before for r in services.store.history(c.question_id) if r.mode == "cram"]
    assert len(logged) == 3  # the failed card came back once in the cram session


def test_bury_and_suspend_take_the_card_out_of_today(services: Services) -> None:
    session = services.start_session()
    buried = session.drop_current("bury")
    suspended = session.drop_current("suspend")
    assert buried is not None and suspended is not None
    left = services.start_session()
    assert [i.question_id for i in left._state.queue] == [_current(session).question_id]
    assert services.store.card(suspended.question_id).suspended


def test_broken_question_file_is_reported_and_the_rest_loads(open_services) -> None:  # type: ignore[no-untyped-def]
    from tests.tui.conftest import BROKEN

    services = open_services(BROKEN)
    view = services.today()
    assert view.total_questions == 3
    assert view.bank_errors and "broken.toml" in view.bank_errors[0]


def test_a_failed_write_does_not_break_reads_or_undo_the_wrong_answer(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = services.start_session()
    first = _current(session)
    _answer_right(session)
    session.grade(4)
    real_answer = services._store.answer

    def disk_full(*args: object, **kwargs: object) -> object:
        raise OSError("disk full")

    monkeypatch.setattr(services._store, "answer", disk_full)
    second = _current(session)
    _answer_right(session)
    write = session.grade(4)
    assert isinstance(write.exception(timeout=5), OSError)
    assert services.store.history(second.question_id) == []  # reads still work
    monkeypatch.setattr(services._store, "answer", real_answer)
    session.undo()  # takes back the failed answer only: the first one stays recorded
    assert _current(session).question_id == second.question_id
    assert [r.quality for r in services.store.history(first.question_id)] == [4]


def test_new_cards_come_in_the_banks_study_order(services: Services) -> None:
    """Topics interleaved, easier first: kv-cache-002 (difficulty 1) before kv-cache-001."""
    session = services.start_session()
    assert [i.question_id for i in session._state.queue] == [
        q.id for q in services.bank.study_order()
    ] == ["batching-001", "kv-cache-002", "kv-cache-001"]


def test_undo_after_the_rollover_hour_takes_back_the_answer(services: Services) -> None:
    """Answer at 03:58, undo at 04:01 (a new study day): the answer is gone, the card restored,
    and answering again logs one review, not two."""
    services.store.update_settings(timezone="UTC", rollover_hour=4)
    services.now = dt.datetime(2026, 11, 3, 3, 58, tzinfo=dt.UTC)
    before = {c.question_id: c for c in services.store.cards()}
    session = services.start_session()
    question_id = _current(session).question_id
    _answer_wrong(session)
    session.grade(1)
    services.now = dt.datetime(2026, 11, 3, 4, 1, tzinfo=dt.UTC)
    item = session.undo()
    assert item is not None and item.question_id == question_id
    assert services.store.history(question_id) == []
    assert services.store.card(question_id) == before[question_id]


def test_undo_refuses_an_answer_that_is_no_longer_the_cards_latest(services: Services) -> None:
    """Another process answered the same card since: undoing ours would erase theirs."""
    session = services.start_session()
    question_id = _current(session).question_id
    _answer_right(session)
    session.grade(4)
    services.store.answer(question_id, 5, correct=True, answer_text="x", response_ms=1,
                          mode="cram", now=services.now)
    assert session.undo() is None
    assert [r.mode for r in services.store.history(question_id)] == ["review", "cram"]


def test_today_counts_only_cards_whose_questions_still_load(
    open_services: Callable[..., Services], tmp_path: Path
) -> None:
    """A pack that is removed (or breaks) after its cards were made must not inflate Today's
    counts with cards no session can serve."""
    pack = tmp_path / "fixture-spec.toml"
    pack.write_bytes((VALID / "fixture-spec.toml").read_bytes())
    with_pack = open_services(pack)
    assert with_pack.today().new == len(with_pack.bank.questions)
    with_pack.close()
    pack.write_text("not = [valid", encoding="utf-8")
    services = open_services(pack)
    today = services.today()
    assert today.new == len(services.bank.questions)
    assert services.start_session().remaining == today.new


def test_mcq_is_checked_by_the_one_checker_letter_index_or_text(services: Services) -> None:
    """A picked index, a letter and the choice's own text all go through check_answer and
    show the choice as `A) text`; what it cannot read is re-asked with its message."""
    from questions.model import LETTERS

    session = services.start_session()
    while not _current(session).is_mcq:
        session.drop_current("bury")
    inst = _current(session).instance
    assert inst.correct_index is not None
    right = f"{LETTERS[inst.correct_index]}) {inst.choices[inst.correct_index]}"
    for bad in ("z", "e", "9", "0"):
        with pytest.raises(Reask):
            session.submit(bad)
    assert session.feedback is None
    fb = session.submit(f"  {inst.choices[inst.correct_index].upper()} ")
    assert fb.correct and fb.expected == right and fb.given == right
    assert fb.chosen_index == inst.correct_index
    cram = services.start_cram()
    while not _current(cram).is_mcq:
        cram.drop_current("bury")
    inst = _current(cram).instance
    assert inst.correct_index is not None
    other = (inst.correct_index + 1) % 4
    fb = cram.submit(LETTERS[other].lower())
    assert not fb.correct and fb.chosen_index == other
    assert fb.given == f"{LETTERS[other]}) {inst.choices[other]}"
    assert cram.submit(other) == fb  # the verdict stands until graded


def test_a_mistyped_wrong_answer_can_be_counted_right_and_is_logged_overridden(
    services: Services,
) -> None:
    session = services.start_session()
    while _current(session).is_mcq:
        session.drop_current("bury")
    item = _current(session)
    wrong = _answer_wrong(session)
    assert session.can_override and wrong.grades == (0, 1, 2)
    fb = session.override()
    assert fb.correct and fb.overridden and fb.grades == (3, 4, 5) and fb.default_grade == 4
    assert not session.can_override
    with pytest.raises(RuntimeError):
        session.override()
    session.grade(4)
    (review,) = services.store.history(item.question_id)
    assert review.correct and review.overridden and review.quality == 4
    assert review.mistake_id is None
    assert session.summary().overridden == 1 and session.summary().correct == 1
    assert item.question_id not in session.pending_redrill  # 4: no re-drill
