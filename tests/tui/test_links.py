"""Links out of a card (#19 items 1 and 4): the lab link opens the named level; related
questions open one key away, and Esc comes back to the card."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from questions.model import LabLink
from tests.tui.conftest import ready, right_keys
from trainer.app import DojoApp
from trainer.screens.lab import LabScreen
from trainer.screens.review import ReviewScreen

AppFactory = Callable[..., DojoApp]


async def test_the_lab_link_opens_the_named_level(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        item = review.session.current
        assert item is not None and item.question.lab is not None
        item.question = replace(item.question, lab=LabLink("batch-engine", 2))
        await pilot.press(*right_keys(item))
        await pilot.press("l")
        lab = app.screen
        assert isinstance(lab, LabScreen)
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if lab.rows:
                break
        row = lab.selected()
        assert row is not None and (row.exercise, row.level) == ("batch-engine", 2)
