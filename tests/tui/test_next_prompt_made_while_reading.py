"""While a card is read, the review screen makes the queued next card's prompt; the next card
paints that one, and a card that comes back another way (undo) paints its own."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import Static

from tests.tui.conftest import ready, right_keys, text_of
from trainer.app import DojoApp
from trainer.screens.review import ReviewScreen


@pytest.mark.slow
async def test_the_next_prompt_is_made_while_reading_and_undo_paints_its_own(
        make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        first, second = screen.session.current, screen.session.upcoming
        assert first is not None and second is not None
        made = screen._next_prompt
        assert made is not None and made.text == second.instance.prompt

        await pilot.press(*right_keys(first))
        await pilot.press("enter")  # grade: the second card paints the prompt made for it
        await pilot.pause()
        await pilot.pause()
        assert screen.session.current is second
        assert screen.query_one("#prompt", Static).content is made

        await pilot.press("ctrl+z")  # the first card again: not the prompt made in advance
        await pilot.pause()
        assert screen.session.current is first
        shown = screen.query_one("#prompt", Static).content
        assert shown is not screen._next_prompt
        assert first.instance.prompt.split()[0] in text_of(app, "#prompt")
        assert getattr(shown, "text", None) == first.instance.prompt


@pytest.mark.slow
async def test_a_session_ended_right_after_a_card_painted_makes_no_next_prompt(
        make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        screen._next_prompt = None
        await pilot.press("escape")  # the summary
        await pilot.pause()
        assert app.screen is not screen
        screen._while_read()  # the after-paint work, come late: nothing to make, no error
        assert screen._next_prompt is None
