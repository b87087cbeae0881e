"""An answer checked but not graded yet is saved with Enter's grade when the learner leaves:
a walkthrough worked a 5-step case study, quit with its verdict showing, and found it asked
afresh at the next start, nothing logged."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.tui.conftest import FlushedStore, open_review, ready, right_keys, text_of, wrong_keys
from trainer.app import DojoApp
from trainer.screens.summary import SummaryScreen

AppFactory = Callable[..., DojoApp]


@pytest.mark.slow
async def test_a_quit_with_the_verdict_showing_saves_enters_grade(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        _review, item = await open_review(app, pilot)
        await pilot.press(*right_keys(item))
        assert "Right" in text_of(app, "#verdict")
        store = FlushedStore(app)
        assert store.history(item.question_id) == []
        await pilot.press("l")  # the lab from the verdict, then quit from there
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert [(r.quality, r.correct) for r in store.history(item.question_id)] == [(4, True)]
    assert app.return_code == 0


@pytest.mark.slow
async def test_ending_with_the_verdict_showing_saves_it_and_the_summary_counts_it(
    make_app: AppFactory,
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        _review, item = await open_review(app, pilot)
        await pilot.press(*wrong_keys(item))
        assert "Not quite" in text_of(app, "#verdict")
        await pilot.press("escape")
        assert isinstance(app.screen, SummaryScreen)
        assert "Answered   1" in text_of(app, "#summary-body")
        store = FlushedStore(app)
        assert [(r.quality, r.correct) for r in store.history(item.question_id)] == [(1, False)]


@pytest.mark.slow
async def test_nothing_is_saved_for_a_card_not_answered(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        _review, item = await open_review(app, pilot)
        await pilot.press("escape")
        assert "Answered   0" in text_of(app, "#summary-body")
        assert FlushedStore(app).history(item.question_id) == []
