"""Named mistakes on screen: a diagnosed wrong answer names its mistake first and the
accepted range, a typo can be counted right with one key, and Stats lists the recurring
mistakes with their concept note one key away."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable
from typing import Any

import pytest

import questions.answers as answers
from tests.tui.conftest import FlushedStore, ready, text_of
from trainer.app import DojoApp
from trainer.screens.browse import BrowseScreen
from trainer.screens.modals import NoteScreen
from trainer.screens.review import ReviewScreen
from trainer.screens.stats import StatsScreen
from trainer.widgets.keybar import KeyBar

DIAGNOSIS = "10x is what you get if you count bits as bytes"


@pytest.fixture
def diagnosing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker names a mistake for every wrong numeric answer (the diagnosis fields of
    questions.answers.Outcome), so the screen can be tested before every question has one."""
    real = answers.check_answer

    def check(item: Any, text: str) -> Any:
        outcome = real(item, text)
        if outcome.reask or outcome.correct or item.question.kind == "mcq":
            return outcome
        return types.SimpleNamespace(**{
            **dataclasses.asdict(outcome), "mistake_id": "bits-as-bytes",
            "diagnosis": DIAGNOSIS, "accepted": "accepted 126.7–129.3 KiB"})

    monkeypatch.setattr(answers, "check_answer", check)


def _review(app: DojoApp) -> ReviewScreen:
    assert isinstance(app.screen, ReviewScreen), app.screen
    return app.screen


async def _numeric_card(app: DojoApp, pilot: Any) -> Any:
    await pilot.press("enter", "ctrl+b", "ctrl+b")  # bury the two MCQs
    item = _review(app).session.current
    assert item is not None and not item.is_mcq
    return item


@pytest.mark.slow
async def test_the_named_mistake_comes_first_then_the_accepted_range(
    make_app: Callable[..., DojoApp], diagnosing: None
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        item = await _numeric_card(app, pilot)
        await pilot.press(*f"{item.instance.answer * 10:g}", "enter")
        lines = [line for line in text_of(app, "#verdict").splitlines() if line.strip()]
        assert lines[0] == DIAGNOSIS
        assert "Not quite" in lines[1] and lines[2] == "accepted 126.7–129.3 KiB"
        await pilot.press("1")
        (logged,) = FlushedStore(app).history(item.question_id)
        assert (logged.mistake_id, logged.overridden, logged.correct) == (
            "bits-as-bytes", False, False)
        await pilot.press("escape", "enter", "s")
        assert isinstance(app.screen, StatsScreen)
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        mistakes = app.screen.query_one("#stats-mistakes")
        shown = str(mistakes.get_option_at_index(0).prompt)  # type: ignore[attr-defined]
        assert "×1" in shown and "bits-as-bytes" in shown and "kv-cache-001" in shown
        await pilot.press("n")  # the highlighted mistake's concept note
        assert isinstance(app.screen, NoteScreen) and app.screen.note_title == "KV-cache sizing"
        await pilot.press("escape")
        mistakes.focus()
        await pilot.press("enter")  # or Enter on the list
        assert isinstance(app.screen, NoteScreen)


@pytest.mark.slow
async def test_a_typo_is_counted_right_with_one_key_and_shown_in_history(
    make_app: Callable[..., DojoApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        item = await _numeric_card(app, pilot)
        keybar = app.screen.query_one(KeyBar)
        assert "Mistyped" not in str(keybar.render())  # only under a wrong verdict
        await pilot.press(*f"{item.instance.answer * 10:g}", "enter")
        await pilot.pause()
        assert "t Mistyped" in str(keybar.render())
        await pilot.press("t")
        await pilot.pause()
        assert "Counted right" in text_of(app, "#verdict")
        assert "(Enter = 4)" in text_of(app, "#gradebar") and "3 hard" in text_of(
            app, "#gradebar")
        assert "Mistyped" not in str(keybar.render())
        await pilot.press("enter")
        store = FlushedStore(app)
        (logged,) = store.history(item.question_id)
        assert (logged.correct, logged.overridden, logged.quality) == (True, True, 4)
        assert store.today_queue().redrill == ()  # graded 4: no re-drill
        app.push_screen(BrowseScreen())
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        screen = app.screen
        assert isinstance(screen, BrowseScreen)
        screen.query_one("#browse-search").value = item.question_id  # type: ignore[attr-defined]
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert "mistyped, counted right" in text_of(app, "#browse-card")
        app.pop_screen()  # back to the summary (that was the last card): it counts the override
        await pilot.pause()
        assert "1 of them mistyped and counted right" in text_of(app, "#summary-body")
        await pilot.press("enter", "s")
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert isinstance(app.screen, StatsScreen)
        assert "KV-cache sizing (1, 1 mistyped)" in text_of(app, "#stats-topics")


@pytest.mark.slow
async def test_a_right_answer_cannot_be_overridden(make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        item = await _numeric_card(app, pilot)
        await pilot.press(*f"{item.instance.answer:g}", "enter", "t")
        assert "✓ Right" in text_of(app, "#verdict") and "Counted" not in text_of(app, "#verdict")
        await pilot.press("enter")
        (logged,) = FlushedStore(app).history(item.question_id)
        assert not logged.overridden
