"""From the grade key until the next card is on screen the garbage collector is held off
(`trainer.core.collector`); it is on again once the card has painted, and whichever way the
session ends; a collector someone else turned off stays off."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from tests.tui.conftest import ready, right_keys
from trainer.app import DojoApp
from trainer.screens.review import ReviewScreen


async def _answer(screen: ReviewScreen, pilot: Pilot[None]) -> None:
    item = screen.session.current
    assert item is not None and not item.instance.is_case
    await pilot.press(*right_keys(item))
    await pilot.pause()
    assert screen.session.feedback is not None


@pytest.mark.slow
async def test_the_collector_is_held_from_the_grade_until_the_next_card_painted(
        make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, ReviewScreen)
        during: list[bool] = []
        show_card = screen.show_card

        def spy() -> None:
            during.append(gc.isenabled())
            show_card()

        screen.show_card = spy  # type: ignore[method-assign]

        await _answer(screen, pilot)
        first = screen.session.current
        await pilot.press("enter")  # the default grade: the next card paints
        await pilot.pause()
        await pilot.pause()
        assert during == [False]  # held while the card was built
        assert screen.session.current is not first
        assert gc.isenabled()  # and on once it painted

        await _answer(screen, pilot)
        gc.disable()  # turned off by someone else: left off
        try:
            await pilot.press("enter")
            await pilot.pause()
            await pilot.pause()
            assert screen.session.answered == 2
            assert not gc.isenabled()
        finally:
            gc.enable()

        await _answer(screen, pilot)
        assert screen.session.remaining == 1  # the last card: its grade ends the session
        screen.action_default_grade()
        assert gc.isenabled()  # on at once: no card will paint
        await pilot.pause()
        assert not isinstance(app.screen, ReviewScreen)  # the summary
