"""The command palette is app-wide: from Today, typing reaches any screen, a
question by id, a lab level, a sim, export and backup."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from textual.command import CommandPalette

from tests.tui.conftest import ready
from trainer.app import DojoApp
from trainer.screens.lab import LabScreen
from trainer.screens.modals import QuestionScreen

AppFactory = Callable[..., DojoApp]


def _titles(app: DojoApp) -> list[str]:
    return [c.title for c in app.get_system_commands(app.screen)]


@pytest.mark.slow
async def test_today_palette_reaches_questions_labs_sims_export_backup(
    make_app: AppFactory,
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        titles = _titles(app)
        for wanted in ("Question kv-cache-001", "Export history", "Backup now"):
            assert wanted in titles, wanted
        assert any(t.startswith("Lab batch-engine L2") and "grade" in t for t in titles)
        assert any(t.startswith("Sim capacity") for t in titles)


async def _run(app: DojoApp, pilot: object, text: str) -> None:
    await pilot.press("ctrl+p")  # type: ignore[attr-defined]
    assert isinstance(app.screen, CommandPalette)
    await pilot.press(*text)  # type: ignore[attr-defined]
    for _ in range(3):  # its search for the text: started, done (a worker), its hits listed
        await pilot.pause()  # type: ignore[attr-defined]
        await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]
    for _ in range(5):
        await app.workers.wait_for_complete()
        await pilot.pause()  # type: ignore[attr-defined]


@pytest.mark.slow
async def test_palette_opens_a_question_a_lab_level_and_exports(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await _run(app, pilot, "Question kv-cache-002")
        assert isinstance(app.screen, QuestionScreen)
        assert app.screen.question.id == "kv-cache-002"
        await pilot.press("escape")
        await _run(app, pilot, "Lab batch-engine L2")
        assert isinstance(app.screen, LabScreen)
        await pilot.press("escape")
        await _run(app, pilot, "Export history")
        assert app.services is not None
        (exported,) = (app.services.store.path.parent / "exports").glob("history-*.json")
        assert json.loads(exported.read_text())["cards"]


@pytest.mark.slow
async def test_a_new_screen_needs_no_list_to_keep_its_keys_once_in_the_palette(
    make_app: AppFactory,
) -> None:
    """A screen's own keys are listed; one bound to a navigation action (here Export, which
    the app lists already) is not listed a second time, with nothing to register in app.py."""
    from textual.binding import Binding

    from trainer.app import NAVIGATION
    from trainer.screens.base import DojoScreen

    class NewScreen(DojoScreen):
        BINDINGS = [
            Binding("x", "app.export", "Export", id="new-export"),
            Binding("z", "zap", "Zap", id="new-zap", tooltip="The new screen's own action"),
        ]

        def action_zap(self) -> None:
            pass

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await app.push_screen(NewScreen())
        await pilot.pause()
        titles = _titles(app)
        assert titles[:len(NAVIGATION)] == [title for title, _, _ in NAVIGATION]
        assert "Zap (z)" in titles
        assert "Export (x)" not in titles and titles.count("Export history") == 1
