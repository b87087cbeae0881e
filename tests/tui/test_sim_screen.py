"""The sim worksheet: typing a dial recomputes the checks; a bad value is named, not applied."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import Input

from tests.tui.conftest import ready, text_of
from trainer.app import DojoApp
from trainer.screens.sim import SimScreen


@pytest.mark.slow
async def test_dials_recompute_and_bad_input_is_named(make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("m")
        assert isinstance(app.screen, SimScreen)
        await pilot.pause()
        assert "✗ At least 64 seats" in text_of(app, "#sim-result")
        gpus = app.screen.query_one("#dial-gpus", Input)
        gpus.focus()
        await pilot.press("end", "backspace", "8")  # 1 GPU -> 8 GPUs
        assert "✓ At least 64 seats" in text_of(app, "#sim-result")
        await pilot.press("q")  # "8q": no such unit
        assert "not an integer" in text_of(app, "#sim-error")
        assert "✓ At least 64 seats" in text_of(app, "#sim-result")  # last good result stays
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert app.screen.query_one("#dial-gpus", Input).value == "1"
        assert text_of(app, "#sim-error") == ""


@pytest.mark.slow
async def test_a_question_links_to_its_sim(make_app: Callable[..., DojoApp]) -> None:
    from tests.tui.conftest import right_keys
    from trainer.screens.review import ReviewScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter", "ctrl+b", "ctrl+b")  # to kv-cache-001, which names a sim
        assert isinstance(app.screen, ReviewScreen)
        item = app.screen.session.current
        assert item is not None and item.question.sim == "capacity"
        await pilot.press(*right_keys(item))
        assert "m sim capacity" in text_of(app, "#links")
        await pilot.press("m")
        assert isinstance(app.screen, SimScreen) and app.screen.sim.name == "capacity"
        await pilot.press("escape")
        assert isinstance(app.screen, ReviewScreen)  # back to grade the card


@pytest.mark.slow
async def test_a_concept_note_links_to_its_topics_sim(make_app: Callable[..., DojoApp]) -> None:
    from tests.tui.conftest import right_keys
    from trainer.screens.modals import NoteScreen
    from trainer.screens.review import ReviewScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter", "ctrl+b", "ctrl+b")  # a kv-cache card: its topic has a sim
        assert isinstance(app.screen, ReviewScreen)
        item = app.screen.session.current
        assert item is not None
        await pilot.press(*right_keys(item))
        await pilot.press("n")
        assert isinstance(app.screen, NoteScreen) and app.screen.sim == "capacity"
        await pilot.press("m")
        assert isinstance(app.screen, SimScreen) and app.screen.sim.name == "capacity"


@pytest.mark.slow
async def test_an_8k_context_reads_as_8192_and_the_screen_says_so(
        make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("m")
        assert isinstance(app.screen, SimScreen)
        await pilot.pause()
        context = app.screen.query_one("#dial-context", Input)
        context.value = "8k"
        await pilot.pause()
        assert "8k read as 8,192 tokens" in text_of(app, "#sim-error")
        assert "8,192 tokens" in text_of(app, "#sim-result")
        context.value = "8192"
        await pilot.pause()
        assert text_of(app, "#sim-error") == ""
