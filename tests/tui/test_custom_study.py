"""Custom study: recurring mistakes, recent lapses, a topic ahead of schedule and
cram before the interview, leaving the schedule alone unless asked; re-drills draw fresh
numbers (kv-cache-001 has two draws, so a repeat would show half the time)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from click.testing import CliRunner

from scheduler.plan import Plan
from tests.core.test_services import _answer_right, _answer_wrong, _current
from tests.tui.conftest import NOW, ready
from trainer.app import DojoApp
from trainer.cli import main
from trainer.core.services import Services
from trainer.core.session import Session
from trainer.screens.review import ReviewScreen
from trainer.screens.study import StudyPicker


def _values(session: Session) -> tuple[object, ...]:
    item = _current(session)
    return tuple(sorted(item.instance.values.items())), item.instance.order


def _until(session: Session, question_id: str) -> None:
    while _current(session).question_id != question_id:
        _answer_right(session)
        session.grade(4)


def test_a_redrill_draws_fresh_numbers(services: Services) -> None:
    services.now = NOW
    session = services.start_session()
    _until(session, "kv-cache-001")
    for _ in range(8):  # fail it again and again: every re-drill changes the numbers
        shown = _values(session)
        _answer_wrong(session)
        session.grade(1)
        _until(session, "kv-cache-001")
        assert _current(session).mode == "redrill"
        assert _values(session) != shown


def test_a_redrill_left_from_earlier_today_draws_fresh_numbers(services: Services) -> None:
    services.now = NOW
    for _ in range(6):
        session = services.start_session()
        _until(session, "kv-cache-001")
        shown = _values(session)
        _answer_wrong(session)
        session.grade(2)
        later = services.start_session()  # the learner quit and came back the same day
        _until(later, "kv-cache-001")
        assert _current(later).mode == "redrill" and _values(later) != shown
        _answer_right(later)
        later.grade(4)  # passed: the next loop re-drills it again only if failed again
        services.store.undo(NOW)
        services.store.undo(NOW)


def _day(services: Services, offset: int) -> None:
    services.now = NOW + dt.timedelta(days=offset)


def test_custom_study_selects_and_leaves_the_schedule_alone(services: Services) -> None:
    _day(services, 0)
    session = services.start_session()
    while session.current is not None:  # kv-cache-001 wrong (a named mistake), the rest right
        item = _current(session)
        if item.question_id == "kv-cache-001" and item.mode == "review":
            session.submit(f"{item.instance.values['total_bytes'] / 2 / 1024:g}")
            assert session.feedback is not None and not session.feedback.correct
            session.grade(1)
        else:
            _answer_right(session)
            session.grade(5)
    store = services.store
    assert store.card("kv-cache-001").lapses == 1
    title, mistakes = services.start_custom("mistakes")
    assert title == "My recurring mistakes"
    assert [i.question_id for i in mistakes._state.queue] == ["kv-cache-001"]
    title, ahead = services.start_custom("ahead", topic="kv-cache")
    assert title == "kv-cache ahead of schedule"  # both due tomorrow
    assert [i.question_id for i in ahead._state.queue] == ["kv-cache-001", "kv-cache-002"]
    before, forecast = store.cards(), store.forecast(30)
    for s in (mistakes, ahead):
        assert all(i.mode == "cram" for i in s._state.queue)
        while s.current is not None:
            _answer_right(s)
            s.grade(5)
    assert store.cards() == before and store.forecast(30) == forecast  # untouched
    _day(services, 1)
    title, lapsed = services.start_custom("lapsed", days=7)
    assert [i.question_id for i in lapsed._state.queue] == ["kv-cache-001"]
    assert services.start_custom("lapsed", days=1)[1].current is None  # failed yesterday
    store.set_plan(Plan(NOW.date() + dt.timedelta(days=10), 30))
    title, cram = services.start_custom("interview")
    assert title == "Cram before the interview"
    assert _current(cram).question_id == "kv-cache-001"  # the weakest on the day first
    assert {i.mode for i in cram._state.queue} == {"cram"}
    # Asked to, the cards due today count as their review.
    title, counted = services.start_custom("interview", reschedule=True)
    assert [i.mode for i in counted._state.queue] == ["review"] * 3
    _answer_right(counted)
    counted.grade(4)
    services.flush()
    assert store.card("kv-cache-001").due > store.study_day(services.now)  # rescheduled

def test_dojo_study_lists_a_set(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    session = services.start_session()
    _answer_wrong(session)
    failed = _current(session).question_id
    session.grade(0)
    services.flush()
    out = CliRunner().invoke(main, ["study", "lapsed", "--days", "3", "--json"])
    assert out.exit_code == 0, out.output
    assert '"question_ids": [\n    "' + failed in out.output
    out = CliRunner().invoke(main, ["study", "ahead"])
    assert out.exit_code == 2 and "needs a topic" in out.output


@pytest.mark.slow
async def test_custom_study_from_today(make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("u")
        assert isinstance(app.screen, StudyPicker)
        await pilot.press("s")  # counting due cards as reviews: on, then off again
        assert app.screen.reschedule
        await pilot.press("s")
        sets = app.screen.query_one("#study-sets")
        sets.highlighted = next(i for i in range(sets.option_count)  # type: ignore[attr-defined]
                                if sets.get_option_at_index(i).id == "ahead:batching")  # type: ignore[attr-defined]
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ReviewScreen)  # nothing reviewed: nothing ahead
        await pilot.press("u")
        await pilot.press("enter")  # "my recurring mistakes": none yet either
        await pilot.pause()
        assert not isinstance(app.screen, (ReviewScreen, StudyPicker))


def test_dojo_study_ahead_names_an_unknown_topic(services: Services) -> None:
    """A topic id that is not in the bank is refused with the ids that are (it listed
    "kv ahead of schedule: 0 cards", exit 0), and one card is "1 card"."""
    out = CliRunner().invoke(main, ["study", "ahead", "--topic", "kv"])
    assert out.exit_code == 2, out.output
    assert "no topic 'kv'" in out.output and "kv-cache" in out.output
    out = CliRunner().invoke(main, ["study", "ahead"])
    assert out.exit_code == 2 and "needs a topic" in out.output and "kv-cache" in out.output
    session = services.start_session()
    topic = str(_current(session).question.topic)
    _answer_right(session)
    session.grade(5)
    services.flush()
    out = CliRunner().invoke(main, ["study", "ahead", "--topic", topic])
    assert out.exit_code == 0, out.output
    assert out.output.startswith(f"{topic} ahead of schedule: 1 card\n"), out.output
