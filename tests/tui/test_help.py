"""F1 help: the screen's own actions first, n/r/l listed, editing keys not."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.tui.conftest import ready, text_of
from trainer.app import DojoApp
from trainer.screens.help import HelpScreen

AppFactory = Callable[..., DojoApp]


@pytest.mark.slow
async def test_review_help_lists_its_actions_first_and_no_editing_keys(
    make_app: AppFactory,
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter", "ctrl+b", "ctrl+b")  # a numeric card: the Input has focus
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        body = text_of(app, "#help-body")
        keys = body[body.index("Keys here"):body.index("Everywhere")]
        for action in ("Undo", "Bury", "Note", "Related", "Lab", "Flag", "End"):
            assert action in keys, action
        assert body.index("Undo") < body.index("Everywhere")
        for editing in ("Delete", "cursor", "Paste", "Select all", "Scroll"):
            assert editing.lower() not in keys.lower(), editing


@pytest.mark.slow
async def test_today_help_opens_with_its_own_keys(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("f1")
        body = text_of(app, "#help-body")
        first = body.split("\n")[1]
        assert "Start" in first
        assert "scroll" not in body[:body.index("Everywhere")].lower()


@pytest.mark.slow
async def test_question_mark_opens_help_but_types_into_a_focused_input(
    make_app: AppFactory,
) -> None:
    """`?` is where a newcomer looks for help first; inside an answer box it is a character."""
    from textual.widgets import Input

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen), type(app.screen).__name__
        assert "f1, ?" in text_of(app, "#help-body")
        await pilot.press("escape", "enter", "ctrl+b", "ctrl+b")  # a numeric card: Input focused
        focused = app.focused
        assert isinstance(focused, Input), type(focused).__name__
        await pilot.press("1", "question_mark")
        assert not isinstance(app.screen, HelpScreen)
        assert focused.value == "1?"
