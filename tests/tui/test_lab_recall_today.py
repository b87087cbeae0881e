"""Today says why a question a failed lab case brought back is in the queue, and the session asks
it as a re-drill (its schedule untouched)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.tui.conftest import NOW, ready, text_of
from trainer.app import DojoApp
from trainer.screens.review import ReviewScreen


@pytest.mark.slow
async def test_today_names_the_failed_case_behind_a_recalled_question(
        make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        assert app.services is not None
        store = app.services.store
        store.answer("kv-cache-002", 4, correct=True, answer_text="b", response_ms=1,
                     now=NOW.replace(hour=9))  # seen this morning: not due, not new
        before = store.card("kv-cache-002")
        assert store.add_lab_recalls([("kv-cache-002", "kv-bytes", 1, "falcon-7b-mqa")],
                                     now=NOW) == ["kv-cache-002"]
        app.action_home()
        for _ in range(50):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if "back from the lab" in text_of(app, "#today-lab"):
                break
        shown = text_of(app, "#today-lab")
        assert "1 question back from the lab" in shown
        assert "kv-bytes L1 failed falcon-7b-mqa → kv-cache-002" in shown
        assert "Re-drill 1 " in text_of(app, "#today-counts")  # not "Re-drill 0" beside it
        session = app.services.start_session()
        recalled = [i for i in session._state.queue if i.question_id == "kv-cache-002"]
        assert [i.mode for i in recalled] == ["redrill"]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        assert store.card("kv-cache-002") == before
