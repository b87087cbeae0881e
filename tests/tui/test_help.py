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
