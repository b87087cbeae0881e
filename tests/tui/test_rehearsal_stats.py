"""Stats: interview-rehearsal times to first pass per lab level, over time, and the best:
the pure grouping, the Stats panel at every size, and `dojo stats` (text and --json)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable

import pytest
from click.testing import CliRunner

from scheduler.records import LabAttempt
from scheduler.store import Store
from tests.tui.conftest import NOW, ready, text_of
from tests.tui.test_sizes import SIZES, _inside, _keybar_keeps_help
from trainer.app import DojoApp
from trainer.cli import main
from trainer.core.stats import rehearsal_line, rehearsal_times

T0 = dt.datetime(2026, 10, 1, 9, 0, tzinfo=dt.UTC)


def _attempt(i: int, at_s: float, elapsed: float, passed: bool, level: int = 2,
             interview_level: int | None = 2) -> LabAttempt:
    metrics: dict[str, float] = {"interview_elapsed_s": elapsed, "interview_grading": 1.0}
    if interview_level is not None:
        metrics["interview_level"] = float(interview_level)
    return LabAttempt(i, "kv-bytes", level, "cpu", passed, [], metrics, 1.0,
                      T0 + dt.timedelta(seconds=at_s))


def test_each_rehearsal_counts_its_first_pass_only() -> None:
    day = 86400.0
    attempts = [
        _attempt(1, 300, 300, False),  # rehearsal 1: fails at 5:00
        _attempt(2, 840, 840, True),  # ... first pass at 14:00
        _attempt(3, 900, 900, True),  # ... passes again: not a new time
        _attempt(4, day + 400, 400, True),  # rehearsal 2 (a day later): 6:40
        _attempt(5, day + 500, 500, True, level=1, interview_level=2),  # L1 graded in L2's
        _attempt(6, 2 * day, 30, True, level=1, interview_level=None),  # an older row: L1
        LabAttempt(7, "kv-bytes", 2, "cpu", True, [], {}, 1.0, T0),  # not a rehearsal
    ]
    [l1, l2] = rehearsal_times(attempts)
    assert [t for _, t in l2.times] == [840.0, 400.0] and l2.best_s == 400.0
    assert (l1.level, [t for _, t in l1.times]) == (1, [30.0])
    assert rehearsal_line(l2) == "kv-bytes L2  █▄  best 6:40 · latest 6:40 · 2 rehearsals"
    assert rehearsal_times([]) == []


def _rehearsed() -> None:
    with Store.open() as store:
        for day, elapsed in ((1, 1500.0), (5, 900.0), (9, 620.0)):
            store.record_lab_attempt(
                "kv-bytes", 2, "cpu", True, [], {"interview_elapsed_s": elapsed,
                                                  "interview_level": 2.0}, 1.0,
                now=NOW - dt.timedelta(days=10 - day))


@pytest.mark.slow
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_stats_shows_the_rehearsal_chart(make_app: Callable[..., DojoApp],
                                               size: tuple[int, int]) -> None:
    _rehearsed()
    app = make_app()
    async with app.run_test(size=size) as pilot:
        await ready(app, pilot)
        await pilot.press("s")
        for _ in range(4):
            await app.workers.wait_for_complete()
            await pilot.pause()
        text = text_of(app, "#stats-rehearsals")
        assert "kv-bytes L2" in text and "best 10:20" in text and "latest 10:20" in text
        assert "3 rehearsals" in text
        _inside(app, ".panel")
        _keybar_keeps_help(app)


@pytest.mark.slow
def test_dojo_stats_prints_the_rehearsals() -> None:
    _rehearsed()
    runner = CliRunner()
    out = runner.invoke(main, ["stats"])
    assert out.exit_code == 0, out.output
    assert "kv-bytes L2  █▅▃  best 10:20 · latest 10:20 · 3 rehearsals" in out.output
    data = json.loads(runner.invoke(main, ["stats", "--json"]).output)
    [r] = data["rehearsals"]
    assert (r["exercise"], r["level"], r["best_s"]) == ("kv-bytes", 2, 620.0)
    assert [t["seconds"] for t in r["times"]] == [1500.0, 900.0, 620.0]
