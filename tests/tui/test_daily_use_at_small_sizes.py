"""Daily-use fixes, each at the sizes the walkthroughs named: Today's two-row key bar at 60x20,
Stats whole at 60x20 on thirty days, bar counts of 100+ apart, and the smaller ones (a ratio
asked as a ratio in the mock round, the `l` key instead of a CLI line, a flag not added twice,
Review's Flag and End at 60x20, whole lab level titles, the lab's result above the report)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import OptionList, Static

from scheduler.store import DB_NAME
from tests.tui.conftest import ready, wrong_keys
from tests.tui.fit import overflows
from tests.tui.history import DAY30
from trainer.app import DojoApp
from trainer.core import mock as mock_core
from trainer.core.services import Services
from trainer.core.text import answer_wanted
from trainer.screens.lab import LabScreen
from trainer.screens.mock import MockScreen
from trainer.screens.review import ReviewScreen
from trainer.screens.stats import FORECAST_DAYS, StatsScreen
from trainer.widgets.charts import BarChart, bars_text
from trainer.widgets.keybar import KeyBar

AppFactory = Callable[..., DojoApp]
SIZES = [(60, 20), (80, 24), (100, 30)]
IDS = [f"{w}x{h}" for w, h in SIZES]


async def _settle(app: DojoApp, pilot: object, rounds: int = 5) -> None:
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()  # type: ignore[attr-defined]


# -- Today's key bar keeps its second row ----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_todays_key_bar_shows_every_key(make_app: AppFactory, size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        bar = app.screen.query_one(KeyBar)
        text = str(bar.render())
        for label in ("Start", "Cram", "Custom", "Browse", "Stats", "Plan", "Lab", "Sims",
                      "Mock", "Quit", "Help", "palette"):
            assert label in text, text
        assert bar.size.height == text.count("\n") + 1, (bar.size, text)  # every row shown


# -- Stats on thirty days at 60x20 -----------------------------------------------------------------

@pytest.mark.slow
async def test_stats_panels_fit_60_columns_on_thirty_days(thirty_day_db: Path,
                                                          tmp_path: Path) -> None:
    shutil.copyfile(thirty_day_db, tmp_path / DB_NAME)
    app = DojoApp(lambda: Services.open(tmp_path / DB_NAME, now=DAY30))
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        await pilot.press("s")
        await _settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        assert overflows(screen) == []
        mock_panel = screen.query_one("#stats-mock", Static)
        assert "#" in str(mock_panel.render()), "the thirty days hold two mock rounds"
        forecast = screen.query_one("#stats-forecast", BarChart)
        assert len(forecast.values) == FORECAST_DAYS
        shown = str(forecast.render()).split()
        assert [int(v) for v in shown if v.isdigit()] == forecast.values  # every day


# -- counts of 100 or more -------------------------------------------------------------------------

def test_bar_counts_of_100_or_more_stay_apart() -> None:
    text = bars_text([0, 197, 0, 173, 1250], ["a", "b", "c", "d", "e"], height=3).plain
    assert text.splitlines()[0].split() == ["0", "197", "0", "173", "1k"]
    narrow = bars_text(list(range(100, 124)), height=2, width=30).plain
    counts = [int(v) for v in narrow.split() if v.isdigit()]
    assert counts == list(range(100, 124))  # in blocks, none cut at the edge
    assert max(len(line) for line in narrow.splitlines()) <= 30


# -- the smaller ones ------------------------------------------------------------------------------

def test_a_ratio_is_asked_as_a_ratio_in_the_mock_round_too() -> None:
    assert answer_wanted("x") == "a ratio, e.g. 2.5"
    assert answer_wanted("KiB") == "a number in KiB"
    assert answer_wanted("") == "a number"
    services = Services.open()
    try:
        question = services.question("queueing-002")
        assert question.unit == "x"
        mock = mock_core.MockRound(0.0, 45, [mock_core.Part(
            "estimate", {"question": question.id, "seed": 3}, question.topic)], [])
        view = mock_core.begin(mock, services)
        assert view is not None and view.how == "a ratio, e.g. 2.5"
    finally:
        services.close()


async def _practise(app: DojoApp, pilot: object, question_id: str) -> ReviewScreen:
    app.practise(question_id)
    await _settle(app, pilot)
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    return screen


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=IDS)
async def test_a_miss_offers_the_l_key_not_a_command(make_app: AppFactory,
                                                    size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        screen = await _practise(app, pilot, "kv-cache-001")
        item = screen.session.current
        assert item is not None
        await pilot.press(*wrong_keys(item))
        await _settle(app, pilot)
        verdict = str(screen.query_one("#verdict", Static).render())
        assert "Practise this in the lab: l opens kv-bytes L1" in verdict, verdict
        assert "dojo lab start" not in verdict
        assert "Flag" in str(screen.query_one(KeyBar).render())  # Flag (^f) and End (esc) shown
        assert "End" in str(screen.query_one(KeyBar).render())


@pytest.mark.slow
async def test_a_flag_is_not_added_twice(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(60, 20)) as pilot:
        await ready(app, pilot)
        await _practise(app, pilot, "kv-cache-001")
        for _ in range(2):
            await pilot.press("ctrl+f")
            await _settle(app, pilot, 2)
            await pilot.press(*"prompt unclear", "enter")
            await _settle(app, pilot, 2)
        await pilot.press("ctrl+f")
        await _settle(app, pilot, 2)
        said = str(app.screen.query_one("#flag-existing", Static).render())
        assert said == "Already flagged: prompt unclear"
        await pilot.press("escape")
        assert app.services is not None
        assert [f.note for f in app.services.store.flags("kv-cache-001")] == ["prompt unclear"]


def test_the_store_keeps_one_flag_per_note(services: Services) -> None:
    store = services.store
    first = store.flag("kv-cache-001", "prompt unclear")
    assert store.flag("kv-cache-001", " prompt unclear ") == first
    store.flag("kv-cache-001", "units wrong")
    assert [f.note for f in store.flags("kv-cache-001")] == ["prompt unclear", "units wrong"]


def _shown(widget: OptionList) -> str:
    """What the list paints, every line of it, as one string without spaces."""
    lines = [widget.render_line(y).text for y in range(widget.size.height)]
    return "".join("".join(lines).split())


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES[:2], ids=IDS[:2])
async def test_lab_level_titles_are_whole(make_app: AppFactory, size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=(size[0], 60)) as pilot:  # tall: every row painted at once
        await ready(app, pilot)
        await pilot.press("l")
        for _ in range(40):
            await _settle(app, pilot, 1)
            if isinstance(app.screen, LabScreen) and app.screen.rows:
                break
        screen = app.screen
        assert isinstance(screen, LabScreen)
        listing = screen.query_one("#lab-list", OptionList)
        shown = _shown(listing)
        for row in screen.rows[:6]:
            title = "".join(row.level_title.split())
            assert title in shown, (row.level_title, shown[:400])


@pytest.mark.slow
async def test_the_labs_result_is_above_the_report_at_80x24(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("i")
        await _settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, MockScreen)
        for _ in range(len(screen.mock.items)):
            await pilot.press("ctrl+k")
            await _settle(app, pilot)
        assert screen.mock.current is None
        feedback = screen.query_one("#mock-feedback", Static)
        assert "Skipped." in str(feedback.render())  # the lab part's own result
        report = screen.query_one("#mock-prompt", Static)
        assert feedback.region.y < report.region.y
        assert feedback.region.bottom <= 24 - 1, feedback.region
