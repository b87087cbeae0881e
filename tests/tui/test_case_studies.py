"""A case study driven by keys (Pilot): scenario, steps one by one, suggested grade, SQLite."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from questions.model import Instance
from tests.tui.conftest import FIXTURES, FlushedStore, ready, text_of
from trainer.app import DojoApp
from trainer.screens.case import CasePanel
from trainer.screens.review import ReviewScreen

# Each drives a whole 5-step case by keys (~7 s under load); the rules are covered fast and
# headless in test_case_core.py.
pytestmark = pytest.mark.slow

AppFactory = Callable[..., DojoApp]
CASES = FIXTURES / "cases"
CASE_ID = "case-studies-001"


def _review(app: DojoApp) -> ReviewScreen:
    assert isinstance(app.screen, ReviewScreen), app.screen
    return app.screen


async def _open_case(app: DojoApp, pilot: Pilot[None]) -> Instance:
    """Start today's session and bury the cards ahead of the case."""
    await ready(app, pilot)
    assert "New 4" in text_of(app, "#today-counts")  # the case is counted with the others
    await pilot.press("enter")
    while (item := _review(app).session.current) is not None and not item.instance.is_case:
        await pilot.press("ctrl+b")
    assert item is not None and item.question_id == CASE_ID
    await pilot.pause()
    return item.instance


async def _type(pilot: Pilot[None], text: str) -> None:
    await pilot.press(*text, "enter")
    await pilot.pause()


def _right(step: Instance) -> str:
    assert step.answer is not None
    return f"{step.answer:g}"


async def test_all_steps_right_suggests_4_and_records_it(make_app: AppFactory) -> None:
    app = make_app(CASES)
    async with app.run_test(size=(80, 24)) as pilot:
        inst = await _open_case(app, pilot)
        assert "Llama-3-8B" in text_of(app, "#prompt")  # the scenario stays on top
        assert "Step 1 of 5" in text_of(app, "#case-step")
        assert not app.screen.query_one("#numeric").display
        assert app.screen.query_one("#case-answer", Input).has_focus
        for k, step in enumerate(inst.steps):
            assert f"Step {k + 1} of 5" in text_of(app, "#case-step")
            await _type(pilot, _right(step))
            verdict = text_of(app, "#case-step-verdict")
            assert "Right" in verdict and "accepted" in verdict
            assert text_of(app, "#case-step-explanation").strip()
            assert not app.screen.query_one("#feedback").display  # no grading mid-case
            await pilot.press("enter")
            await pilot.pause()
        assert app.screen.query_one("#feedback").display
        assert "5 of 5 steps right" in text_of(app, "#verdict")
        assert "KV cache" in text_of(app, "#explanation")  # the case's own explanation
        bar = text_of(app, "#gradebar")
        assert "0 blackout" in bar and "5 easy" in bar and "(Enter = 4)" in bar
        await pilot.press("enter")  # take the suggestion
        store = FlushedStore(app)
        (logged,) = store.history(CASE_ID)
        assert (logged.quality, logged.correct, logged.mode) == (4, True, "review")
        assert store.card(CASE_ID).interval == 1


async def test_one_wrong_step_suggests_3_shows_the_diagnosis_and_a_grade_can_change(
    make_app: AppFactory,
) -> None:
    app = make_app(CASES)
    async with app.run_test(size=(80, 24)) as pilot:
        inst = await _open_case(app, pilot)
        for k, step in enumerate(inst.steps):
            if k == 1:
                await _type(pilot, "64")  # forgot the factor 2 for K and V
                verdict = text_of(app, "#case-step-verdict")
                assert "Not quite" in verdict and "forgot the factor 2" in verdict
                assert "128 KiB" in verdict  # revealed before the next step
                assert "I mistyped" in text_of(app, "#case-next")
            else:
                await _type(pilot, _right(step))
            await pilot.press("enter")
            await pilot.pause()
        assert "4 of 5 steps right" in text_of(app, "#verdict")
        assert "(Enter = 3)" in text_of(app, "#gradebar")
        assert "✗ step 2/5" in text_of(app, "#case-done")
        await pilot.press("1")  # the learner overrules the suggestion
        (logged,) = FlushedStore(app).history(CASE_ID)
        assert (logged.quality, logged.correct, logged.mistake_id) == (
            1, False, "kv_kib:forgot-k-and-v")


async def test_an_unreadable_answer_is_reasked_and_t_overrides_the_step(
    make_app: AppFactory,
) -> None:
    app = make_app(CASES)
    async with app.run_test(size=(60, 20)) as pilot:
        inst = await _open_case(app, pilot)
        await _type(pilot, "lots")
        assert "can't read" in text_of(app, "#case-reask")
        panel = app.screen.query_one(CasePanel)
        case = _review(app).session.case
        assert case is not None and case.verdicts == [] and "Step 1 of 5" in text_of(
            app, "#case-step")
        assert app.screen.query_one("#case-answer", Input).has_focus
        await pilot.press(*["backspace"] * 4)
        await _type(pilot, "16.06")  # GB, not GiB: wrong
        assert "Not quite" in text_of(app, "#case-step-verdict")
        assert panel.has_focus
        await pilot.press("t")
        assert "Counted right" in text_of(app, "#case-step-verdict")
        await pilot.press("enter")
        await pilot.pause()
        for step in inst.steps[1:]:
            await _type(pilot, _right(step))
            await pilot.press("enter")
            await pilot.pause()
        assert "(Enter = 4)" in text_of(app, "#gradebar")
        await pilot.press("enter")
        (logged,) = FlushedStore(app).history(CASE_ID)
        assert logged.overridden and logged.correct and logged.quality == 4
        await pilot.press("ctrl+z")  # undo: the case comes back from step 1, nothing logged
        await pilot.pause()
        item = _review(app).session.current
        assert item is not None and item.question_id == CASE_ID
        assert "Step 1 of 5" in text_of(app, "#case-step")
        assert FlushedStore(app).history(CASE_ID) == []


async def test_browse_lists_the_case_and_previews_its_steps(make_app: AppFactory) -> None:
    from textual.widgets import DataTable

    app = make_app(CASES)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("b")
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        table = app.screen.query_one(DataTable)
        ids = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert CASE_ID in ids
        table.move_cursor(row=ids.index(CASE_ID))
        for _ in range(3):
            await app.workers.wait_for_complete()
            await pilot.pause()
        preview = text_of(app, "#browse-card")
        assert CASE_ID in preview and "· case" in preview
        assert "1. How many GiB do the weights take?" in preview and "5. " in preview
