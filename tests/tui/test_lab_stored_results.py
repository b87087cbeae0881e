"""A failed grading read back after a restart says how to see why: its messages are not kept,
so the log names the command that replays the same cases (it showed "FAIL … wrong", no why)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.widgets import DataTable

from tests.tui.conftest import ready
from trainer.app import DojoApp


@pytest.mark.slow
async def test_a_stored_failure_names_its_replay(make_app: Callable[..., DojoApp]) -> None:
    from scheduler.store import Store
    from trainer.screens.lab import LabScreen

    with Store.open() as store:  # an earlier run of the app graded kv-bytes L1
        store.record_lab_attempt(
            "kv-bytes", 1, "cpu", False,
            [{"id": "tiny-one-layer", "passed": True, "kind": "", "seed": 424810},
             {"id": "zero-layers", "passed": False, "kind": "wrong", "seed": 424810}],
            {}, 0.5)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LabScreen)
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if screen.rows and screen.query_one("#lab-results", DataTable).row_count:
                break
        log = "\n".join(screen.log_lines)
        assert "dojo lab grade kv-bytes --level 1 --seed 424810" in log, log
        assert "S 424810" in log and "not kept" in log, log
