"""The Lab screen as a learner meets it (#45): failures grouped without per-case data and cases
not run counted truly in the log (item 7), the seed and replay command, the next-level line
only when it applies, and no stale status after a failed grading (item 9)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable, ProgressBar

from tests.lab.test_failure_groups import STOPPED, _failed, _summary, _wrong
from tests.tui.conftest import FIXTURES, ready
from trainer.app import DojoApp
from trainer.screens.lab import LabScreen


async def _lab(app: DojoApp, pilot) -> LabScreen:  # type: ignore[no-untyped-def]
    await pilot.press("l")
    screen = app.screen
    assert isinstance(screen, LabScreen)
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if screen.rows:
            return screen
    raise AssertionError("the lab catalogue never loaded")


@pytest.mark.slow
async def test_the_log_groups_failures_and_counts_cases_not_run(
        make_app: Callable[..., DojoApp]) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        table = screen.query_one("#lab-results", DataTable)
        bar = screen.query_one(ProgressBar)
        timeouts = [_failed(f"big-{i}", "timeout", "no answer within 1 s — an infinite loop? "
                            "(stopped)", size=100) for i in range(3)]
        skipped = [_failed(f"small-{i:02d}", "skipped", STOPPED, size=1) for i in range(52)]
        wrong = [_wrong(i) for i in range(16)]
        for event in [*wrong, *timeouts, *skipped]:
            screen._on_event(event, table, bar)
        screen._on_event(_summary(71), table, bar)
        log = screen.log_lines
        assert ("15 more failed the same way (wrong: kv_bytes_per_token: expected …, got … "
                "(0.5× the expected value) — the cache stores both (factor 2))") in log
        assert any(line.startswith("2 more failed the same way (timeout: ") for line in log)
        assert "52 not run: your code was already stopped 3 times in this run (timeout) — fix " \
               "that first" in log
        assert not any("51 more" in line or line.startswith("✗ small-") for line in log)
        assert sum(line.startswith("✗ ") for line in log) == 2  # one per way of failing


@pytest.mark.slow
async def test_a_seed_set_with_s_is_sent_and_the_replay_command_is_shown(
        make_app: Callable[..., DojoApp], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = tmp_path / "requests.jsonl"
    monkeypatch.setenv("DOJO_TEST_REQUESTS", str(requests))
    app = make_app(lab_command=[sys.executable, str(FIXTURES / "lab" / "recording_server.py")])
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        await pilot.press("s")  # kv-bytes L1 started
        await pilot.press("S")
        await pilot.pause()
        await pilot.press(*"1234", "enter")
        await pilot.pause()
        assert screen.seed == 1234
        await pilot.press("g")
        assert screen._grading is not None
        await screen._grading.wait()
        await pilot.pause()
        sent = [json.loads(x) for x in requests.read_text().splitlines()]
        assert {"exercise": "kv-bytes", "level": 1, "seed": 1234} in sent
        assert "$ dojo lab grade kv-bytes --level 1 --seed 1234 --json" in screen.log_lines
        assert "Replay: dojo lab grade kv-bytes --level 1 --seed 1234  (or S 1234 here)" \
            in screen.log_lines
        await pilot.press("S", "enter")  # empty: random again
        assert screen.seed is None
