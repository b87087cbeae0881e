"""The Lab screen as a learner meets it: failures grouped without per-case data and cases
not run counted truly in the log, the seed and replay command, the next-level line
only when it applies, and no stale status after a failed grading."""

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


@pytest.mark.slow
async def test_a_failed_grading_is_not_painted_over_by_a_stale_catalogue_read(
        make_app: Callable[..., DojoApp]) -> None:
    """The cursor moved during the grading; a catalogue read started before it ended (still
    saying "passing") finishes last: the list keeps the grading's verdict."""
    import copy

    from trainer.core.lab import Lab, Summary

    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        screen = await _lab(app, pilot)
        index = next(i for i, r in enumerate(screen.rows)
                     if (r.exercise, r.level) == ("kv-bytes", 1))
        with Lab.open() as lab:
            stale = copy.deepcopy(lab.catalogue())
        stale.rows[index].status = "passing"  # what the attempts said before this grading
        stale_read = screen._fetches + 1
        screen._fetches += 2  # that read, then the one started when the grading ended
        listing = screen.query_one("#lab-list")
        listing.highlighted = index + 1  # type: ignore[attr-defined]  # the cursor moved on
        await pilot.pause()
        screen._summary(Summary(exercise="kv-bytes", device="cpu", seed=1, passed=False,
                                levels={"1": False}, duration_s=1.0, replay="", stored=True,
                                store_error=""),
                        screen.query_one("#lab-results-title"),  # type: ignore[arg-type]
                        screen.query_one(ProgressBar))
        assert screen.rows[index].status == "failing"
        assert screen._loaded(stale, stale_read) is False
        assert screen.rows[index].status == "failing"
        prompt = str(listing.get_option_at_index(index).prompt)  # type: ignore[attr-defined]
        assert "✗" in prompt and "✓" not in prompt
        listing.highlighted = index  # type: ignore[attr-defined]
        await pilot.pause()
        assert "Status: failing" in str(screen.query_one("#lab-detail").render())
