"""The real app driven by keys (Pilot) on a temp SQLite store and the fixture bank."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import Input, OptionList

from tests.tui.conftest import BROKEN, FlushedStore, ready, right_keys, text_of
from trainer.app import DojoApp
from trainer.core.session import Item
from trainer.screens.cram import CramPicker
from trainer.screens.help import HelpScreen
from trainer.screens.review import ReviewScreen
from trainer.screens.summary import SummaryScreen

AppFactory = Callable[..., DojoApp]


def _review(app: DojoApp) -> ReviewScreen:
    assert isinstance(app.screen, ReviewScreen), app.screen
    return app.screen


def _item(app: DojoApp) -> Item:
    item = _review(app).session.current
    assert item is not None
    return item


def _right_key(item: Item) -> str:
    assert item.instance.correct_index is not None
    return "abcd"[item.instance.correct_index]


@pytest.mark.slow
async def test_first_run_explains_the_app_and_enter_starts(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        assert "Welcome" in text_of(app, "#today-headline")
        assert "New 3" in text_of(app, "#today-counts")
        await pilot.press("enter")
        assert _item(app).question_id == "batching-001"
        await pilot.press("escape")  # leaving early says what is left
        assert isinstance(app.screen, SummaryScreen)
        assert "Left today 3" in text_of(app, "#summary-body")


@pytest.mark.slow
async def test_mcq_right_then_wrong(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        first = _item(app)
        assert first.is_mcq
        await pilot.press(_right_key(first))
        assert "Right" in text_of(app, "#verdict")
        assert "(Enter = 4)" in text_of(app, "#gradebar")
        await pilot.press("enter")
        store = FlushedStore(app)
        (logged,) = store.history(first.question_id)
        assert (logged.quality, logged.correct, logged.mode) == (4, True, "review")
        assert logged.response_ms >= 0

        second = _item(app)
        assert second.is_mcq and second.question_id == "kv-cache-002"
        assert second.instance.correct_index is not None
        wrong = (second.instance.correct_index + 1) % 4
        await pilot.press(str(wrong + 1))  # digits answer an MCQ too
        verdict = text_of(app, "#verdict")
        # The verdict names letters; the texts are in the marked choices (not repeated).
        right_letter = "ABCD"[second.instance.correct_index]
        assert "Not quite" in verdict and f"answer {right_letter}" in verdict
        assert f"you: {'ABCD'[wrong]}" in verdict
        assert second.instance.choices[wrong] not in verdict
        marked = [str(o.prompt) for o in app.screen.query_one("#choices", OptionList).options]
        assert any("✓" in m and second.instance.choices[second.instance.correct_index] in m
                   for m in marked)
        assert any("✗" in m and second.instance.choices[wrong] in m for m in marked)
        assert "0 blackout" in text_of(app, "#gradebar")
        await pilot.press("0")
        (logged,) = store.history(second.question_id)
        assert (logged.quality, logged.correct) == (0, False)
        assert store.card(second.question_id).lapses == 1
        assert _item(app).question_id == "kv-cache-001"
        await pilot.press("ctrl+b")  # bury works while the numeric input has focus
        assert store.card("kv-cache-001").buried_until is not None
        again = _item(app)  # only the re-drill is left
        assert (again.question_id, again.mode) == ("kv-cache-002", "redrill")


@pytest.mark.slow
async def test_numeric_garbage_is_reasked_then_the_right_value_passes(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter", "ctrl+b", "ctrl+b")  # bury the two MCQs
        item = _item(app)
        assert item.question_id == "kv-cache-001"
        answer = app.screen.query_one("#answer", Input)
        assert answer.has_focus and "KiB" in answer.placeholder
        await pilot.press(*"lots", "enter")
        assert "can't read" in text_of(app, "#reask")
        assert _review(app).session.feedback is None
        store = FlushedStore(app)
        assert store.history(item.question_id) == []
        await pilot.press(*["backspace"] * 4, *f"{item.instance.answer:g} KiB", "enter")
        assert "Right" in text_of(app, "#verdict")
        await pilot.press("5")
        assert [r.quality for r in store.history(item.question_id)] == [5]


@pytest.mark.slow
async def test_redrill_until_four_then_summary(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        failed = _item(app)
        await pilot.press("b" if _right_key(failed) == "a" else "a", "enter")  # wrong: grade 1
        await pilot.press(_right_key(_item(app)), "enter")
        await pilot.press("ctrl+b")  # bury the numeric card
        again = _item(app)
        assert again.question_id == failed.question_id and again.mode == "redrill"
        assert "Re-drill" in text_of(app, "#review-title")
        await pilot.press(_right_key(again), "3")  # right but hard: comes back again
        third = _item(app)
        assert third.question_id == failed.question_id
        await pilot.press(_right_key(third), "enter")  # good: done
        assert isinstance(app.screen, SummaryScreen)
        body = text_of(app, "#summary-body")
        assert "Answered   4" in body and "2 re-drills" in body and "75%" in body
        assert "Left today" not in body
        store = FlushedStore(app)
        assert store.today_queue(app.services.now).redrill == ()  # type: ignore[union-attr]
        await pilot.press("enter")
        await ready(app, pilot)
        assert "Today 4" in text_of(app, "#today-counts")


@pytest.mark.slow
async def test_undo_several_answers(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        store = FlushedStore(app)
        before = store.cards()
        await pilot.press("enter")
        first = _item(app)
        await pilot.press(_right_key(first), "5")
        second = _item(app)
        await pilot.press(*right_keys(second), "4")
        assert store.card(second.question_id).interval == 1
        await pilot.press("ctrl+z")
        assert _item(app) is second and store.history(second.question_id) == []
        await pilot.press("ctrl+z")
        assert _item(app) is first
        assert store.cards() == before
        assert store.history(first.question_id) == []


@pytest.mark.slow
async def test_cram_leaves_the_schedule_unchanged(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        store = FlushedStore(app)
        before = store.cards()
        await pilot.press("c")
        assert isinstance(app.screen, CramPicker)
        await pilot.press("enter")  # all topics
        while isinstance(app.screen, ReviewScreen):
            item = _item(app)
            assert item.mode == "cram"
            if item.is_mcq:
                await pilot.press(_right_key(item), "enter")
            else:
                await pilot.press(*f"{item.instance.answer:g}", "enter", "enter")
        assert isinstance(app.screen, SummaryScreen)
        assert "cram" in text_of(app, ".titlebar")
        assert store.cards() == before
        logged = [r.mode for c in before for r in store.history(c.question_id)]
        assert logged == ["cram"] * 3
        await pilot.press("enter")
        await ready(app, pilot)
        assert "New 3" in text_of(app, "#today-counts")


@pytest.mark.slow
async def test_a_broken_question_file_is_shown_and_the_rest_works(make_app: AppFactory) -> None:
    app = make_app(BROKEN)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        errors = text_of(app, "#today-errors")
        assert "could not be loaded" in errors and "broken.toml" in errors
        await pilot.press("enter")
        assert _item(app).question_id == "batching-001"


@pytest.mark.slow
async def test_help_and_palette_list_the_screen_actions(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        await pilot.press(_right_key(_item(app)), "enter")  # something to undo
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for action in ("Undo", "Bury", "Suspend", "Flag", "End", "Browse", "Stats", "Lab"):
            assert any(t.startswith(action) for t in titles), (action, titles)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, ReviewScreen)
