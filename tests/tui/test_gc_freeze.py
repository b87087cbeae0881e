"""The app keeps what it built at start (and a session's screen) out of the garbage collector's
full passes (`gc.freeze`: a full pass over that heap cost 115-150 ms of an answer), and
gives it back when it ends, so a process that runs many apps (the tests) frees each one."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest

from tests.tui.conftest import ready
from trainer.app import DojoApp


@pytest.mark.slow
async def test_frozen_while_running_and_released_at_exit(
        make_app: Callable[..., DojoApp]) -> None:
    gc.unfreeze()
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        assert gc.get_freeze_count() > 0
        await pilot.press("enter")  # a session: its screen is frozen too
        await pilot.pause()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
