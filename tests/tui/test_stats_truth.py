"""The statistics tell the truth: a realistic multi-week history, loaded through
`dojo import` into a real SQLite file, shows the counts a learner would make by hand, in
`dojo stats --json` and on the Stats screen.

The earlier tests passed with SQL that summed a boolean (each topic had at most one success),
which reads any count above zero back as 1: "43 right of 65" showed as 2%."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.scheduler.learner import simulate_history
from tests.tui.conftest import NOW, ready, text_of
from trainer.app import DojoApp
from trainer.cli import main
from trainer.screens.stats import StatsScreen

FIRST_DAY = dt.date(2026, 7, 1)
TODAY = NOW.date()  # the fixed clock of the TUI fixtures: 2026-11-02 10:00 UTC
DAYS = (TODAY - FIRST_DAY).days  # the history ends yesterday
TITLES = {"batching": "Continuous batching", "kv-cache": "KV-cache sizing", "paging": "paging"}


def _retention(reviews: list[dict[str, Any]], start: dt.date, end: dt.date) -> tuple[int, int]:
    """(passed, total) of the scheduled answers on mature cards (interval >= 21 d before)."""
    mature = [r for r in reviews if r["mode"] == "review" and r["before"]["interval"] >= 21
              and start <= dt.date.fromisoformat(r["study_day"]) <= end]
    return sum(r["quality"] >= 3 for r in mature), len(mature)


def _by_topic(history: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    """Per topic: (scheduled answers, correct, overridden), counted from the file."""
    topic = {c["question_id"]: c["topic"] for c in history["cards"]}
    out: dict[str, list[int]] = {}
    for r in history["reviews"]:
        if r["mode"] == "review":
            row = out.setdefault(topic[r["question_id"]], [0, 0, 0])
            row[0] += 1
            row[1] += r["correct"]
            row[2] += r["overridden"]
    return {t: (a, c, o) for t, (a, c, o) in out.items()}


@pytest.fixture
def imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The simulated history, written as an export file and merged with `dojo import`."""
    monkeypatch.setenv("DOJO_NOW", NOW.isoformat())
    history = simulate_history(FIRST_DAY, DAYS)
    path = tmp_path / "history.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    runner = CliRunner()
    done = runner.invoke(main, ["settings", "timezone=UTC"])
    assert done.exit_code == 0, done.output
    done = runner.invoke(main, ["import", str(path)])
    assert done.exit_code == 0, done.output
    assert f"Imported {len(history['reviews'])} answers" in done.output
    return history


@pytest.mark.slow
def test_stats_json_counts_every_success(imported: dict[str, Any]) -> None:
    history, reviews = imported, imported["reviews"]
    topics = _by_topic(history)
    # The history is what the defect needs to show: many successes per topic, re-drills,
    # cram, overrides and mature reviews in the window.
    assert all(correct >= 20 for _, correct, _ in topics.values()), topics
    modes = Counter(r["mode"] for r in reviews)
    assert modes["redrill"] >= 20 and modes["cram"] >= 20, modes
    assert sum(o for _, _, o in topics.values()) >= 5
    assert _retention(reviews, TODAY - dt.timedelta(days=29), TODAY)[1] >= 20

    out = CliRunner().invoke(main, ["stats", "--json", "--days", "30"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert {t: (a["answered"], a["correct"], a["overridden"])
            for t, a in report["topic_accuracy"].items()} == topics
    for t, a in report["topic_accuracy"].items():
        assert a["accuracy"] == pytest.approx(topics[t][1] / topics[t][0])
    passed, total = _retention(reviews, TODAY - dt.timedelta(days=29), TODAY)
    assert report["true_retention"] == {"passed": passed, "total": total,
                                        "rate": pytest.approx(passed / total)}
    assert 1 < passed < total  # a bool would read 1
    start = TODAY - dt.timedelta(days=29)
    assert report["overridden"] == sum(
        r["overridden"] for r in reviews if dt.date.fromisoformat(r["study_day"]) >= start)
    per_day = Counter(r["study_day"] for r in reviews)
    assert report["reviews_per_day"] == {
        (start + dt.timedelta(days=i)).isoformat():
            per_day.get((start + dt.timedelta(days=i)).isoformat(), 0) for i in range(30)}
    weeks_start = TODAY - dt.timedelta(days=7 * 12 - 1)
    expected_weeks = []
    for i in range(12):
        first = weeks_start + dt.timedelta(days=7 * i)
        p, n = _retention(reviews, first, first + dt.timedelta(days=6))
        expected_weeks.append({"week_of": first.isoformat(), "passed": p, "total": n})
    assert [{k: w[k] for k in ("week_of", "passed", "total")}
            for w in report["retention_by_week"]] == expected_weeks
    assert sum(w["passed"] > 1 for w in expected_weeks) >= 3
    intervals = Counter(c["interval"] for c in history["cards"] if c["due"] is not None)
    assert sum(report["interval_distribution"].values()) == sum(intervals.values())
    assert report["interval_distribution"]["21-59d"] == sum(
        n for i, n in intervals.items() if 21 <= i <= 59)


@pytest.mark.slow
async def test_stats_screen_shows_the_same_counts(
    imported: dict[str, Any], make_app: Callable[..., DojoApp],
) -> None:
    reviews = imported["reviews"]
    topics = _by_topic(imported)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(app, pilot)
        await pilot.press("s")
        assert isinstance(app.screen, StatsScreen)
        for _ in range(5):
            await app.workers.wait_for_complete()
            await pilot.pause()
        shown = text_of(app, "#stats-topics")
        for topic, (answered, correct, overridden) in topics.items():
            line = next(x for x in shown.splitlines() if TITLES[topic] in x)
            assert f"{correct / answered:.0%} {TITLES[topic]} ({answered}, " \
                   f"{overridden} mistyped)" in line, (line, answered, correct)
        retention = text_of(app, "#stats-retention")
        for days in (7, 30, 90):
            passed, total = _retention(reviews, TODAY - dt.timedelta(days=days - 1), TODAY)
            rate = "—" if not total else f"{passed / total:.0%}"
            assert re.search(rf"{days} d\s+{re.escape(rate)} \({total}\)", retention), retention
        headline = text_of(app, "#stats-headline")
        year = sum(1 for r in reviews
                   if dt.date.fromisoformat(r["study_day"]) > TODAY - dt.timedelta(days=365))
        assert f"{year} answers" in headline
