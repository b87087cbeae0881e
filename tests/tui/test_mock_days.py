"""A mock round peeked on one study day and resumed in the app nineteen days later:
`i` says since when it sat open, its clock stands where it was left, and the round is listed on
the day it was finished."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

import pytest

from tests.tui.conftest import BANK, NOW, ready
from trainer.app import DojoApp
from trainer.core import mock as core
from trainer.core.services import Services
from trainer.screens.mock import MockScreen


@pytest.mark.slow
async def test_a_round_left_for_days_says_so_and_its_clock_skips_them(
        make_app: Callable[..., DojoApp]) -> None:
    wall = [time.time() - 19 * 86400]
    day2 = Services.open(bank_paths=[BANK], now=NOW - dt.timedelta(days=19))
    try:
        day2.store.update_settings(timezone="UTC")
        mock = core.new_round(day2, 45, clock=lambda: wall[0])
        core.begin(mock, day2, clock=lambda: wall[0])
        wall[0] += 137
        core.leave(mock, day2, clock=lambda: wall[0])
    finally:
        day2.close()
    app = make_app()
    said: list[str] = []
    notify = app.notify

    def record(message: str, *args: object, **kwargs: object) -> None:
        said.append(str(message))
        notify(message, *args, **kwargs)  # type: ignore[arg-type]

    app.notify = record  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("i")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MockScreen) and screen.mock.round_id == mock.round_id
        assert any(n.startswith(f"Resuming mock round #{mock.round_id} at 2:17 of 45:00: left "
                                "open since 2026-10-14 (19 days ago)") for n in said), said
        title = str(screen.query_one("#mock-title").render())
        assert " · 2:1" in title and "of 45:00" in title, title  # 2:17 and a few seconds
        assert title.split(" · ")[1] < "3:00", title
        await pilot.press("ctrl+k")  # skip the first part
        await pilot.pause()
        assert screen.mock.items[0].seconds < 600  # not the nineteen days
        for _ in range(len(screen.mock.items)):
            if screen.mock.current is None:
                break
            await pilot.press("ctrl+k")
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert screen.mock.current is None
        assert app.services is not None
        rounds = app.services.store.mock_rounds()
        assert [at.date() for _, at, _, _ in rounds] == [NOW.date()]
