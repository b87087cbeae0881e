"""Labs that come back, in the TUI: a due lab card is a row on Today (not before its day);
`r` starts its rebuild (a blank stub, the learner's file kept aside) and opens the Lab screen on
that level; the row fits at every size."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import OptionList

from lab.exercises import get
from scheduler.store import Store
from tests.lab_state import interview, solution_path
from tests.lab_state import start as start_exercise
from tests.tui.conftest import NOW, ready, text_of
from tests.tui.test_sizes import SIZES, _inside, _keybar_keeps_help
from trainer.app import DojoApp
from trainer.screens.lab import LabScreen
from trainer.screens.today import TodayScreen


def _passed(days_before: int) -> None:
    """kv-bytes L1 passed `days_before` days before the app's clock, in 14 minutes."""
    with Store.open() as store:
        store.update_settings(timezone="UTC")
        store.grade_lab_card("kv-bytes", 1, 4, passed=True, rebuild=False, pass_s=14 * 60,
                             gradings=2, now=NOW - dt.timedelta(days=days_before))


@pytest.mark.slow
async def test_a_due_lab_card_is_a_today_row_and_r_starts_its_rebuild(
        make_app: Callable[..., DojoApp]) -> None:
    ex = get("kv-bytes")
    start_exercise(ex)
    mine = solution_path(ex)
    mine.write_text(mine.read_text() + "\n# my own work\n")
    _passed(9)  # first interval is 1 day: due 8 days ago
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        rows = app.screen.query_one("#today-rebuilds", OptionList)
        assert rows.display and rows.option_count == 1
        prompt = str(rows.get_option_at_index(0).prompt)
        assert "Rebuild: kv-bytes L1 — last passed 9 days ago in 14 min" in prompt
        await pilot.press("r")
        for _ in range(50):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if isinstance(app.screen, LabScreen) and app.screen.rows:
                break
        assert isinstance(app.screen, LabScreen)
        session = interview(ex)
        assert session is not None and session.rebuild and session.level == 1
        assert mine.read_text() == ex.stub_path.read_text()  # the blank stub
        assert session.moved_aside is not None
        assert "# my own work" in Path(session.moved_aside).read_text()  # kept, restorable


@pytest.mark.slow
async def test_no_row_before_the_card_is_due(make_app: Callable[..., DojoApp]) -> None:
    _passed(0)  # passed today: due tomorrow
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        assert not app.screen.query_one("#today-rebuilds", OptionList).display
        assert "Rebuild" not in str(app.screen.query_one("KeyBar").render())


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_rebuild_row_fits(make_app: Callable[..., DojoApp],
                                    size: tuple[int, int]) -> None:
    _passed(9)
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        assert isinstance(app.screen, TodayScreen)
        _inside(app, "#today-rebuilds, .panel")
        _keybar_keeps_help(app)
        view = app.screen.view
        assert view is not None and len(view.rebuilds) == 1
        assert "to rebuild" in text_of(app, "#today-headline") or view.to_do
