"""Every screen and modal at 60x20, 80x24 and 100x30 with thirty days of history (and a fresh
folder at 60x20): no widget's text is taller or wider than its region, and no widget runs past
the container that shows it (`tests.tui.fit.overflows`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.pilot import Pilot
from textual.widgets import Static

from scheduler.store import DB_NAME
from tests.tui.fit import overflows
from tests.tui.history import DAY30
from trainer.app import DojoApp
from trainer.core.services import Services
from trainer.screens.review import ReviewScreen

# (what, keys from Today, keys back to Today): each is checked after its keys.
WALK: list[tuple[str, list[str], list[str]]] = [
    ("Help", ["f1"], ["escape"]),
    ("Plan", ["p"], ["escape"]),
    ("Cram picker", ["c"], ["escape"]),
    ("Custom study picker", ["u"], ["escape"]),
    ("Stats", ["s"], ["escape"]),
    ("Browse", ["b"], []),
    ("Browse: a question", ["down", "enter"], ["escape", "escape"]),
    ("Lab", ["l"], ["escape"]),
    ("Sims", ["m"], ["escape"]),
    ("Palette", ["ctrl+p"], ["escape"]),
    ("Mock round", ["i"], []),
    ("Mock report", ["ctrl+k"] * 7, ["escape"]),
    ("Review: a question", ["enter"], []),
    ("Review: a wrong answer", ["wrong"], []),
    ("Flag", ["ctrl+f"], ["escape"]),
    ("Summary", ["escape"], ["enter"]),
]


def _app(db: Path) -> DojoApp:
    def services() -> Services:
        return Services.open(db, now=DAY30)

    return DojoApp(services)


async def _settle(app: DojoApp, pilot: Pilot[None], rounds: int = 5) -> None:
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def _wrong(app: DojoApp, pilot: Pilot[None]) -> None:
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    item = screen.session.current
    assert item is not None
    if item.is_mcq:
        assert item.instance.correct_index is not None
        await pilot.press("abcd"[(item.instance.correct_index + 1) % 4])
    else:  # a number ten times off (a case study: its first step)
        await pilot.press(*f"{(item.instance.answer or 1) * 10:g}", "enter")


async def _walk(app: DojoApp, pilot: Pilot[None]) -> dict[str, list[str]]:
    for _ in range(200):
        await _settle(app, pilot, 1)
        if getattr(app.screen, "view", None) is not None and not getattr(
                app.screen, "plan_pending", True):
            break
    await _settle(app, pilot)
    found = {"Today": overflows(app.screen)}
    for what, keys, back in WALK:
        for key in keys:
            if key == "wrong":
                await _wrong(app, pilot)
            else:
                await pilot.press(key)
            await _settle(app, pilot)
        found[f"{what} ({type(app.screen).__name__})"] = overflows(app.screen)
        for key in back:
            await pilot.press(key)
            await _settle(app, pilot)
    return {k: v for k, v in found.items() if v}


SIZES = [(60, 20), (80, 24), (100, 30)]


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_every_screen_fits_thirty_days(thirty_day_db: Path, tmp_path: Path,
                                             size: tuple[int, int]) -> None:
    db = tmp_path / DB_NAME
    shutil.copyfile(thirty_day_db, db)
    app = _app(db)
    async with app.run_test(size=size) as pilot:
        problems = await _walk(app, pilot)
    assert problems == {}, "\n".join(f"{k}: {p}" for k, v in problems.items() for p in v)


@pytest.mark.slow
async def test_every_screen_fits_a_fresh_folder_at_60x20(tmp_path: Path) -> None:
    app = _app(tmp_path / DB_NAME)
    async with app.run_test(size=(60, 20)) as pilot:
        problems = await _walk(app, pilot)
    assert problems == {}, "\n".join(f"{k}: {p}" for k, v in problems.items() for p in v)


# -- the check itself rejects what it must ---------------------------------------------------

class _Broken(App[None]):
    """A fixed-height text too tall for it, a nowrap
    line too wide, and a box wider than the panel that shows it."""

    CSS = """
    #tall { height: 1; }
    #wide { text-wrap: nowrap; width: 20; }
    #box { width: 30; overflow: hidden; }
    #inner { width: 50; }
    """

    def compose(self) -> ComposeResult:
        yield Static("one\ntwo", id="tall")
        yield Static("a line longer than twenty cells", id="wide")
        with Vertical(id="box"):
            yield Static("x" * 50, id="inner")


async def test_the_fit_check_names_each_overflow() -> None:
    app = _Broken()
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        problems = overflows(app.screen)
    assert any(p.startswith("Static#tall: text of 2 lines in 1") for p in problems), problems
    assert any(p.startswith("Static#wide: a line of 31 cells in 20") for p in problems), problems
    assert any(p.startswith("Static#inner: columns 0-50 shown in 0-30") for p in problems), \
        problems
