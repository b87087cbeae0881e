"""Faults met in the app: what the learner is told, with the real
app on a real SQLite file."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import replace

import pytest
from sqlalchemy.exc import OperationalError

from scheduler.store import Store
from tests.tui.conftest import ready, right_keys, text_of
from trainer.app import DojoApp
from trainer.core.views import TodayView
from trainer.screens.review import ReviewScreen
from trainer.screens.today import TodayScreen

AppFactory = Callable[..., DojoApp]


def _messages(app: DojoApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def _settle(app: DojoApp, pilot: object) -> None:
    assert app.services is not None
    app.services.flush()
    for _ in range(5):
        await pilot.pause()  # type: ignore[attr-defined]


@pytest.mark.slow
async def test_a_card_answered_in_another_window_is_said_and_skipped(
    make_app: AppFactory,
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        item = app.screen.session.current
        assert item is not None and app.services is not None
        with Store.open(app.services.store.path) as other:  # the second window answers it
            other.answer(item.question_id, 4, correct=True, answer_text="x", response_ms=1,
                         now=app.services.now)
        await pilot.press(*right_keys(item))
        await pilot.press("enter")
        await _settle(app, pilot)
        assert any("already answered in another window" in m for m in _messages(app))
        assert not any("mode='redrill'" in m for m in _messages(app))
        assert app.screen.session.current is not item  # moved on


@pytest.mark.slow
async def test_an_answer_on_a_full_disk_says_it_was_not_saved(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        assert app.services is not None

        def full() -> None:
            raise OperationalError("INSERT", {},
                                   sqlite3.OperationalError("database or disk is full"))

        monkeypatch.setattr(app.services._store, "_inside_answer_transaction", full)
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        item = app.screen.session.current
        assert item is not None
        await pilot.press(*right_keys(item), "enter")
        await _settle(app, pilot)
        assert "disk full: your last answer was not saved" in " ".join(_messages(app))
        assert app.services.store.history(item.question_id) == []
        session = app.screen.session  # type: ignore[attr-defined]
        assert session.answered == 0 and not session.can_undo  # matches the database
        assert session._state.queue[-1].question_id == item.question_id  # asked again


@pytest.mark.slow
async def test_a_far_future_dojo_now_is_refused_on_the_home_screen(
    dojo_home: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOJO_NOW", "9999-12-31")
    app = DojoApp()
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(50):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if app.load_error:
                break
        headline = text_of(app, "#today-headline")
        assert "DOJO_NOW" in headline and "OverflowError" not in headline


@pytest.mark.slow
async def test_bad_settings_are_named_on_the_home_screen(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.services is not None
        with sqlite3.connect(app.services.store.path) as conn:
            conn.execute("INSERT OR REPLACE INTO settings(key, value) VALUES ('new_limit', '{')")
            conn.execute("INSERT OR REPLACE INTO settings(key, value) "
                         "VALUES ('timezone', '\"Mars/Base\"')")
        assert isinstance(app.screen, TodayScreen)
        app.screen.reload()
        await ready(app, pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        errors = text_of(app, "#today-alert")
        assert "new_limit" in errors and "timezone" in errors and "defaults" in errors


@pytest.mark.slow
async def test_a_slow_stale_fetch_never_paints_over_a_newer_one(make_app: AppFactory) -> None:
    """Item 10: a fetch started before the session ended must not repaint old counts."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        screen = app.screen
        assert isinstance(screen, TodayScreen) and app.services is not None
        services = app.services
        real = services.today
        release = threading.Event()
        calls: list[int] = []

        def today(*, plan: bool = True) -> TodayView:
            calls.append(1)
            view = real(plan=plan)
            if len(calls) == 1:  # the stale one: computed, then delayed
                release.wait(5)
                return replace(view, due=25)
            return view

        services.today = today  # type: ignore[method-assign]
        screen.reload()
        await pilot.pause()
        assert screen.query_one("#today-counts").has_class("stale")  # old counts marked
        screen.reload()
        for _ in range(20):
            await pilot.pause()
            if len(calls) == 2 and screen.view is not None and screen.view.due != 25:
                break
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.view is not None and screen.view.due != 25
        assert "Due [b]25" not in text_of(app, "#today-counts")
        assert not screen.query_one("#today-counts").has_class("stale")
