"""Browse (filters, search, preview with history, suspend/unsuspend) and Stats, through keys."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import DataTable

from tests.tui.conftest import FlushedStore, ready, text_of, wrong_keys
from trainer.app import DojoApp
from trainer.screens.browse import BrowseScreen
from trainer.screens.review import ReviewScreen
from trainer.screens.stats import StatsScreen


def _ids(table: DataTable[str]) -> list[str]:
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def _loaded(app: DojoApp, pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


@pytest.mark.slow
async def test_browse_search_filter_preview_and_suspend(make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        item = app.screen.session.current
        assert item is not None and item.question_id == "batching-001"
        await pilot.press("abcd"[item.instance.correct_index or 0], "enter")
        await pilot.press("escape", "enter", "b")
        screen = app.screen
        assert isinstance(screen, BrowseScreen)
        await _loaded(app, pilot)
        table = screen.query_one(DataTable)
        assert _ids(table) == ["batching-001", "kv-cache-001", "kv-cache-002"]
        preview = text_of(app, "#browse-card")
        assert "batching-001" in preview and "History" in preview and "review" in preview

        await pilot.press("slash", *"factor of 2")  # search the prompt text
        assert _ids(table) == ["kv-cache-002"]
        await pilot.press("enter")  # back to the table
        assert table.has_focus
        await pilot.press("ctrl+s")  # suspend it
        await _loaded(app, pilot)
        store = FlushedStore(app)
        assert store.card("kv-cache-002").suspended
        assert "suspended" in str(table.get_row_at(0)[1])
        await pilot.press("ctrl+s")  # and back
        await _loaded(app, pilot)
        assert not store.card("kv-cache-002").suspended

        screen.query_one("#browse-search").value = ""  # type: ignore[attr-defined]
        screen.query_one("#browse-status").value = "scheduled"  # type: ignore[attr-defined]
        await pilot.pause()
        assert _ids(table) == ["batching-001"]
        screen.query_one("#browse-status").value = "new"  # type: ignore[attr-defined]
        screen.query_one("#browse-topic").value = "kv-cache"  # type: ignore[attr-defined]
        await pilot.pause()
        assert _ids(table) == ["kv-cache-001", "kv-cache-002"]


@pytest.mark.slow
async def test_stats_show_accuracy_distributions_and_forecast(
    make_app: Callable[..., DojoApp],
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("enter")
        assert isinstance(app.screen, ReviewScreen)
        session = app.screen.session
        item = session.current
        assert item is not None
        await pilot.press("abcd"[item.instance.correct_index or 0], "5")
        item = session.current
        assert item is not None
        await pilot.press(*wrong_keys(item), "0")
        await pilot.press("escape", "enter", "s")
        assert isinstance(app.screen, StatsScreen)
        await _loaded(app, pilot)
        assert "2 answers" in text_of(app, "#stats-headline")
        topics = text_of(app, "#stats-topics")
        assert "100% Continuous batching (1)" in topics and "0% KV-cache sizing (1)" in topics
        assert "2.60" in text_of(app, "#stats-ef") and "2.50" in text_of(app, "#stats-ef")
        assert "1d" in text_of(app, "#stats-intervals")
        assert "weekly ············" in text_of(app, "#stats-retention")  # no mature review yet
        forecast = app.screen.query_one("#stats-forecast")
        assert forecast.values[1] == 2  # type: ignore[attr-defined]  # both due tomorrow


@pytest.mark.slow
async def test_browse_filters_flagged_questions_and_shows_the_note(
    make_app: Callable[..., DojoApp],
) -> None:
    """A flag is findable in Browse."""
    from textual.widgets import Select

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        assert app.services is not None
        app.services.store.flag("kv-cache-001", "units are wrong")
        await pilot.press("b")
        for _ in range(50):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if app.screen.query_one(DataTable).row_count:
                break
        app.screen.query_one("#browse-status", Select).value = "flagged"
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        assert table.get_row_at(0)[0] == "kv-cache-001"
        for _ in range(20):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if "units are wrong" in text_of(app, "#browse-card"):
                break
        assert "Flagged (1)" in text_of(app, "#browse-card")


@pytest.mark.slow
async def test_browse_shows_syllabus_coverage_and_filters_by_item(
        make_app: Callable[..., DojoApp]) -> None:
    """y lists every syllabus item with its questions, studied and recall; the topic filter
    takes an item and keeps only its questions."""
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("b")
        screen = app.screen
        assert isinstance(screen, BrowseScreen)
        await _loaded(app, pilot)
        await pilot.press("y")
        card = text_of(app, "#browse-card")
        assert "Syllabus coverage" in card
        assert "KV-cache sizing and concurrent seats · 2 · 0 · —" in card
        assert "Static, dynamic and continuous batching · 1 · 0 · —" in card
        screen.query_one("#browse-topic").value = "item:kv-cache-sizing"  # type: ignore[attr-defined]
        await pilot.pause()
        assert _ids(screen.query_one(DataTable)) == ["kv-cache-001", "kv-cache-002"]
