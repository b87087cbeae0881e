"""Links out of a card: the lab link opens the named level; related
questions open one key away, and Esc comes back to the card."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from questions.model import LabLink
from tests.tui.conftest import open_review, ready, right_keys
from trainer.app import DojoApp
from trainer.screens.lab import LabScreen

AppFactory = Callable[..., DojoApp]


@pytest.mark.slow
async def test_the_lab_link_opens_the_named_level(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        _review, item = await open_review(app, pilot)
        assert item.question.lab is not None
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


@pytest.mark.slow
async def test_each_grade_key_shows_the_next_interval(make_app: AppFactory) -> None:
    """Item 9: a card passed yesterday (interval 1) shows 6d on every pass, and ↻ on the 3
    that brings it back today."""
    import datetime as dt

    from tests.tui.conftest import NOW, text_of

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.services is not None
        app.services.store.answer("batching-001", 4, correct=True, answer_text="x",
                                  response_ms=1, now=NOW - dt.timedelta(days=1))
        _review, item = await open_review(app, pilot)
        assert item.question_id == "batching-001"
        await pilot.press(*right_keys(item))
        bar = text_of(app, "#gradebar")
        assert "3 hard 6d↻" in bar and "4 good 6d" in bar and "5 easy 6d" in bar
        assert "(Enter = 4)" in bar


@pytest.mark.slow
async def test_a_related_question_is_one_key_away_and_back(make_app: AppFactory) -> None:
    """Item 4: `r` lists them, `1` opens the first, Esc, Esc: the card. (kv-cache-002 is not
    studied yet, so its answer stays hidden.)"""
    from trainer.screens.modals import QuestionScreen, RelatedScreen

    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        # to kv-cache-001, related to -002
        review, item = await open_review(app, pilot, "enter", "ctrl+b", "ctrl+b")
        assert item.question_id == "kv-cache-001"
        await pilot.press(*right_keys(item), "r")
        assert isinstance(app.screen, RelatedScreen)
        await pilot.press("1")
        opened = app.screen
        assert isinstance(opened, QuestionScreen) and opened.question.id == "kv-cache-002"
        body = opened.query_one("#question-body")
        assert "Answer:" not in body._markdown  # type: ignore[attr-defined]
        assert "practise it now" in body._markdown  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert isinstance(app.screen, RelatedScreen)
        await pilot.press("escape")
        assert app.screen is review and review.session.feedback is not None
