"""Home with an interview date set, on the real bank: the whole home, plan included, is on
screen before the store opens (the plan's simulation run by the quick path, or read from the
plan cache), fits 60x20, 80x24 and 100x30, and is what the store's own fetch shows after it."""

from __future__ import annotations

import datetime as dt
import json
import threading
from pathlib import Path

import pytest

from tests.tui.conftest import text_of
from tests.tui.fit import overflows
from trainer.app import DojoApp
from trainer.core.services import Services
from trainer.screens.today import TodayScreen

START = dt.datetime(2026, 9, 1, 9, tzinfo=dt.UTC)
INTERVIEW = dt.date(2026, 10, 1)
SIZES = [(60, 20), (80, 24), (100, 30)]


def _history(home: Path) -> None:
    """Three study days on the real bank, then an interview date 27 days after the third."""
    from scheduler.plan import Plan

    services = Services.open(now=START)
    services.store.update_settings(timezone="UTC", new_limit=5)
    for day in range(3):
        now = START + dt.timedelta(days=day)
        queue = services.store.today_queue(now)
        for n, item in enumerate([*queue.reviews, *queue.new]):
            services.store.answer(item.question_id, 4 if n % 4 else 1, correct=bool(n % 4),
                                  answer_text="x", response_ms=12000, now=now)
    services.store.set_plan(Plan(INTERVIEW, 25))
    services.close()
    assert (home / "dojo.sqlite3").exists()


async def _wait(pilot: object, done: object) -> None:
    for _ in range(300):
        if done():  # type: ignore[operator]
            return
        await pilot.pause(0.02)  # type: ignore[attr-defined]
    raise AssertionError("the home never got there")


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_plan_is_on_home_before_the_store_opens(
        dojo_home: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int],
        held_store: threading.Event) -> None:
    from scheduler.plan_cache import AHEAD_DAYS, CACHE_NAME

    _history(dojo_home)
    monkeypatch.setenv("DOJO_NOW", (START + dt.timedelta(days=4, hours=1)).replace(tzinfo=None)
                       .isoformat())
    release = held_store
    width = size[0]
    for start in ("the day's first start", "a later start"):
        assert (dojo_home / CACHE_NAME).exists() == (start == "a later start")
        release.clear()
        app = DojoApp()
        async with app.run_test(size=size) as pilot:
            try:
                screen = app.screen
                assert isinstance(screen, TodayScreen)
                await _wait(pilot, lambda s=screen: s.view is not None and not s.plan_pending)
                await pilot.pause()  # painted
                assert app.services is None, start  # the store has not opened yet
                quick = text_of(app, "#today-plan")
                lines = quick.splitlines()
                assert max(len(x) for x in lines) <= width - 4, lines
                words = " ".join(quick.split())  # the headline wraps at 60 columns
                assert words.startswith(f"Interview {INTERVIEW} · 26 days left · 25 min/day · "), (
                    start, words)
                assert "new/day" in words and ("on track" in words or "does not fit" in words)
                assert "Recall on the day, weakest first" in words
                assert overflows(screen) == [], (start, size)
                release.set()
                await _wait(pilot, lambda a=app, s=screen: a.services is not None
                            and not s._from_quick and not s.plan_pending)
                await app.workers.wait_for_complete()
                await pilot.pause()
                assert text_of(app, "#today-plan") == quick, start  # the store's fetch: the same
                assert overflows(screen) == []
                kept = json.loads((dojo_home / CACHE_NAME).read_text())["entries"]
                assert len(kept) == 1 + AHEAD_DAYS  # today's plan, the next days' ahead
            finally:  # a failed check does not leave the factory held for 10 s
                release.set()
