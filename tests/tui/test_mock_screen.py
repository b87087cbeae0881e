"""The mock round in the app (i on Today): a whole round answered through the screen records its
score and shows in Stats; Esc leaves it open and i resumes it where it stopped."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import Input

from tests.mock.helpers import right_answer, solve_lab
from tests.tui.conftest import ready, text_of
from trainer.app import DojoApp
from trainer.core import mock as core
from trainer.screens.mock import MockScreen
from trainer.screens.today import TodayScreen


@pytest.mark.slow
async def test_a_mock_round_in_the_app_end_to_end(
        make_app: Callable[..., DojoApp], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "choose_lab", lambda bank, weak: ("kv-bytes", 1, "kv-cache"))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("i")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MockScreen)
        assert "1/7 · Estimates" in text_of(app, "#mock-head")
        assert app.services is not None
        first_id = screen.mock.round_id

        # Leave after one answer; i comes back to the same round at the same place.
        screen.query_one("#mock-input", Input).value = right_answer(screen.mock, app.services)
        await pilot.press("enter")
        position = screen.mock.position
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, TodayScreen)
        await pilot.press("i")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MockScreen)
        assert screen.mock.round_id == first_id and screen.mock.position == position

        for _ in range(20):
            item = screen.mock.current
            assert item is not None
            if item.kind == "lab":
                break
            screen.query_one("#mock-input", Input).value = right_answer(screen.mock,
                                                                        app.services)
            await pilot.press("enter")
            await pilot.pause()
        assert "kv-bytes L1" in text_of(app, "#mock-head")
        solve_lab("kv-bytes")
        await pilot.press("ctrl+g")
        for _ in range(600):  # the grader runs in a sandboxed child
            await pilot.pause(0.05)
            if screen.mock.current is None and not screen.grading:
                break
        assert "Round" in text_of(app, "#mock-head") and "100%" in text_of(app, "#mock-head")
        report = text_of(app, "#mock-prompt")
        assert "Estimates" in report and "Coding (lab)" in report
        rounds = app.services.store.mock_rounds()
        assert [(rid, score) for rid, _, score, _ in rounds] == [(first_id, 1.0)]

        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("s")
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if "round" in text_of(app, "#stats-mock"):
                break
        chart = text_of(app, "#stats-mock")
        assert "1 round, best 100%, latest 100%" in chart and f"#{first_id}" in chart
