"""Issue #33 "Screens" (items 6-13) at the sizes the walkthrough named: each test fails on the
screens as they were before the fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from textual.widget import Widget
from textual.widgets import DataTable

from tests.tui.conftest import ready, text_of
from trainer.app import DojoApp
from trainer.screens.review import ReviewScreen

AppFactory = Callable[..., DojoApp]


async def _settle(app: DojoApp, pilot: object, rounds: int = 4) -> None:
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()  # type: ignore[attr-defined]


def _in_view(body: Widget, widget: Widget) -> None:
    """Every row of `widget` lies inside the scrolled `body`'s visible rows (screen space)."""
    view, region = body.content_region, widget.region
    assert region.height and view.y <= region.y and region.bottom <= view.bottom, (
        f"{widget.id} rows {region.y}-{region.bottom} outside the view {view.y}-{view.bottom}")


async def _numeric_card(app: DojoApp, pilot: object) -> ReviewScreen:
    """Start today's session and skip to kv-cache-001 (numeric, with a named mistake)."""
    await pilot.press("enter")  # type: ignore[attr-defined]
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    for _ in range(5):
        item = screen.session.current
        assert item is not None
        if item.question_id == "kv-cache-001":
            return screen
        await pilot.press("ctrl+b")  # type: ignore[attr-defined]  # bury: next card
    raise AssertionError("kv-cache-001 never came up")


@pytest.mark.slow
async def test_60x20_wrong_answer_shows_the_correct_answer_in_view(make_app: AppFactory) -> None:
    """Item 6: the diagnosis and the "answer 128 KiB" line are both on screen at 60x20."""
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        review = await _numeric_card(app, pilot)
        item = review.session.current
        assert item is not None
        total = item.instance.values["total_bytes"]
        long = " ".join(["A long scenario sentence about the model and its cache."] * 6)
        item.instance = replace(item.instance, prompt=long)  # as tall as a real bank's prompt
        await pilot.press(*f"{total / 2 / 1024:g}", "enter")  # the forgot-K-and-V mistake
        await _settle(app, pilot)
        verdict = text_of(app, "#verdict")
        assert "forgot the factor 2" in verdict and "answer" in verdict
        _in_view(review.query_one("#review-body"), review.query_one("#verdict"))


@pytest.mark.slow
async def test_60x20_case_step_wrong_answer_shows_the_answer_line(make_app: AppFactory) -> None:
    """Item 6 as the walkthrough met it: a case study's wrong step at 60x20 showed its
    diagnosis while "✗ Not quite … answer 21.7 ms" sat below the fold."""
    from tests.tui.conftest import FIXTURES

    app = make_app(FIXTURES / "cases")
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        review = app.screen
        assert isinstance(review, ReviewScreen)
        while (item := review.session.current) is not None and not item.instance.is_case:
            await pilot.press("ctrl+b")
        assert item is not None
        for step in item.instance.steps[:3]:  # steps further down the scenario
            assert step.answer is not None
            await pilot.press(*f"{step.answer * 10:g}", "enter")
            await _settle(app, pilot)
            line = review.query_one("#case-step-verdict")
            assert "Not quite" in text_of(app, "#case-step-verdict")
            _in_view(review.query_one("#review-body"), line)
            await pilot.press("enter")
            await _settle(app, pilot)
